package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/spool-run/spool/client"
)

// TestPollingRESTCountsAsWatching: a client reading a running job's log
// over REST with a wait sees each line within moments of its print: its
// reads keep the job watched, so the worker sends each line promptly
// instead of at its flush interval, and a read waiting past the last line
// answers as soon as the next is stored.
//
// The job prints a line every 100 ms; the worker's flush interval while
// no one watches is 5 s. A prober reads the stored log every 20 ms over
// Connect without following (a read that does not count as watching) to
// see when each line is stored. For the first 5 s only the prober reads:
// lines wait for the flush interval, seconds. Then the REST poller starts,
// reading as a simple client would (again at once after a page of lines,
// half a second after an empty one) with wait=10s, and from a second later
// (its first read must reach the worker) it must see each line within
// 300 ms of its print. The same client without the wait sees lines up to
// half a second late: they wait in the store for its next read.
func TestPollingRESTCountsAsWatching(t *testing.T) {
	addr := freePort(t)
	_, c := startServerEnv(t, addr, t.TempDir(), []string{"SPOOL_EXECUTION_BATCHING_FLUSH_INTERVAL_SECONDS=5"})
	startWorker(t, "worker", "http://"+addr, t.TempDir())
	job, _, err := c.Submit(context.Background(), client.SubmitParams{
		Script: `i=1; while [ $i -le 150 ]; do echo $i; sleep 0.1; i=$((i+1)); done`})
	if err != nil {
		t.Fatal(err)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	p := &prober{c: c, id: job.ID, seen: map[int64]time.Duration{}, printed: map[int64]time.Time{}}
	probing := make(chan error, 1)
	go func() { probing <- p.run(ctx) }()

	waitLines(t, c, job.ID, 1)
	time.Sleep(5 * time.Second) // the prober alone: no one watches
	pollFrom := time.Now()
	r := &restPoller{base: "http://" + addr, id: job.ID, wait: 10 * time.Second, seen: map[int64]probed{}}
	polling := make(chan error, 1)
	go func() { polling <- r.run(ctx) }()
	waitFinal(t, c, job.ID)
	cancel()
	if err := <-probing; err != nil {
		t.Fatal(err)
	}
	if err := <-polling; err != nil {
		t.Fatal(err)
	}

	var unwatched, stored, seen []time.Duration
	for _, l := range p.lines() {
		switch {
		case l.printed.Before(pollFrom):
			unwatched = append(unwatched, l.latency)
		case l.printed.After(pollFrom.Add(time.Second)):
			stored = append(stored, l.latency)
		}
	}
	for _, l := range r.seen {
		if l.printed.After(pollFrom.Add(time.Second)) {
			seen = append(seen, l.latency)
		}
	}
	if len(unwatched) < 20 || len(stored) < 50 || len(seen) < 50 {
		t.Fatalf("%d lines before the poller, %d stored and %d seen by it after it took effect: too few to judge", len(unwatched), len(stored), len(seen))
	}
	worstUnwatched := slices.Max(unwatched)
	seenBy := percentiles(seen)
	t.Logf("lines stored after their print: unwatched max %v (%d lines); with the poller %v (%d lines)", worstUnwatched, len(unwatched), percentiles(stored), len(stored))
	t.Logf("lines seen by the poller after their print: %v (%d lines)", seenBy, len(seen))
	// Unwatched, lines wait for the 5 s flush interval; the prober itself
	// must not have counted as watching.
	if worstUnwatched < 2*time.Second {
		t.Fatalf("before the poller, the slowest line was stored %v after its print: the job was watched already", worstUnwatched)
	}
	// Watched, the worker flushes every 20 ms and a waiting read answers
	// as a line is stored; the bound leaves room for a loaded machine and
	// is still below the half second by which the same client polling
	// without a wait sees lines late.
	if seenBy.p99 > 300*time.Millisecond {
		t.Fatalf("a REST poller waiting for lines saw them %v after their print (p99): they did not reach it promptly", seenBy.p99)
	}
}

// prober reads a job's stored log over and over without following it,
// noting when each line is first seen.
type prober struct {
	c  *client.Client
	id string

	mu      sync.Mutex
	seen    map[int64]time.Duration // line number → stored this long after its print (at most)
	printed map[int64]time.Time
}

type probed struct {
	printed time.Time
	latency time.Duration
}

// run reads every 20 ms until ctx ends.
func (p *prober) run(ctx context.Context) error {
	after := int64(0)
	for ctx.Err() == nil {
		for line, err := range p.c.Lines(ctx, p.id, client.StreamOptions{FromLine: after + 1}) {
			if err != nil {
				if ctx.Err() != nil {
					return nil
				}
				return err
			}
			now := time.Now()
			p.mu.Lock()
			p.seen[line.Number] = now.Sub(line.Time)
			p.printed[line.Number] = line.Time
			p.mu.Unlock()
			after = line.Number
		}
		select {
		case <-ctx.Done():
		case <-time.After(20 * time.Millisecond):
		}
	}
	return nil
}

// lines are the lines seen, in order.
func (p *prober) lines() []probed {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make([]probed, 0, len(p.seen))
	for n := int64(1); n <= int64(len(p.seen)); n++ {
		out = append(out, probed{printed: p.printed[n], latency: p.seen[n]})
	}
	return out
}

// restPoller reads pages of a job's log over REST as a simple client
// would: again at once after a page of lines (there may be more), half a
// second after an empty one, each read waiting up to wait (0: not at all)
// for a line. It notes when it sees each line.
type restPoller struct {
	base, id string
	wait     time.Duration
	seen     map[int64]probed // line number → printed, seen this long after
}

// run reads until ctx ends.
func (r *restPoller) run(ctx context.Context) error {
	after := int64(0)
	for {
		u := fmt.Sprintf("%s/api/v1/jobs/%s/logs?after_line=%d", r.base, r.id, after)
		if r.wait > 0 {
			u += "&wait=" + r.wait.String()
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
		if err != nil {
			return err
		}
		req.Header.Set("Authorization", "Bearer "+adminKey)
		resp, err := http.DefaultClient.Do(req)
		if ctx.Err() != nil {
			return nil
		}
		if err != nil {
			return err
		}
		var page struct {
			Events []struct {
				LineNumber int64 `json:"line_number"`
				Timestamp  int64 `json:"timestamp"`
			} `json:"events"`
			Pagination struct {
				NextAfterLine int64 `json:"next_after_line"`
			} `json:"pagination"`
		}
		err = json.NewDecoder(resp.Body).Decode(&page)
		resp.Body.Close()
		if err != nil || resp.StatusCode != http.StatusOK {
			return fmt.Errorf("GET logs: %s, %v", resp.Status, err)
		}
		now := time.Now()
		for _, l := range page.Events {
			printed := time.UnixMilli(l.Timestamp)
			r.seen[l.LineNumber] = probed{printed: printed, latency: now.Sub(printed)}
		}
		after = page.Pagination.NextAfterLine
		if len(page.Events) > 0 {
			continue
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(500 * time.Millisecond):
		}
	}
}
