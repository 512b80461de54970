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

// TestPollingRESTCountsAsWatching: a client polling a running job's log
// over REST every 500 ms keeps the job watched, so its worker sends each
// line within moments of its print instead of at its flush interval.
//
// The job prints a line every 100 ms; the worker's flush interval while
// no one watches is 5 s. A prober reads the stored log every 20 ms over
// Connect without following (a read that does not count as watching) to
// see when each line is stored. For the first 5 s only the prober reads:
// lines wait for the flush interval, seconds. Then the REST poller starts,
// and from a second later (its first page must reach the worker), each
// line is stored far sooner than the flush interval.
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
	polling := make(chan error, 1)
	go func() { polling <- pollREST(ctx, "http://"+addr, job.ID, 500*time.Millisecond) }()
	waitFinal(t, c, job.ID)
	cancel()
	if err := <-probing; err != nil {
		t.Fatal(err)
	}
	if err := <-polling; err != nil {
		t.Fatal(err)
	}

	var unwatched, watched []time.Duration
	for _, l := range p.lines() {
		switch {
		case l.printed.Before(pollFrom):
			unwatched = append(unwatched, l.latency)
		case l.printed.After(pollFrom.Add(time.Second)):
			watched = append(watched, l.latency)
		}
	}
	if len(unwatched) < 20 || len(watched) < 50 {
		t.Fatalf("%d lines before the poller, %d after it took effect: too few to judge", len(unwatched), len(watched))
	}
	slices.Sort(unwatched)
	slices.Sort(watched)
	worstUnwatched := unwatched[len(unwatched)-1]
	p99 := watched[(len(watched)*99+99)/100-1]
	t.Logf("lines stored after their print: unwatched max %v (%d lines); polled every 500 ms: median %v, p99 %v, max %v (%d lines)",
		worstUnwatched, len(unwatched), watched[len(watched)/2], p99, watched[len(watched)-1], len(watched))
	// Unwatched, lines wait for the 5 s flush interval; the prober itself
	// must not have counted as watching.
	if worstUnwatched < 2*time.Second {
		t.Fatalf("before the poller, the slowest line was stored %v after its print: the job was watched already", worstUnwatched)
	}
	// Watched, the worker flushes every 20 ms. The bound leaves room for a
	// loaded machine and is still far below the flush interval.
	if p99 > 1500*time.Millisecond {
		t.Fatalf("with a REST poller, p99 of lines stored after their print is %v: the poller did not count as watching", p99)
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

// pollREST reads pages of the job's log every interval, as a REST client
// would, until ctx ends.
func pollREST(ctx context.Context, base, id string, interval time.Duration) error {
	after := int64(0)
	for {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, fmt.Sprintf("%s/api/v1/jobs/%s/logs?after_line=%d", base, id, after), nil)
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
			Pagination struct {
				NextAfterLine int64 `json:"next_after_line"`
			} `json:"pagination"`
		}
		err = json.NewDecoder(resp.Body).Decode(&page)
		resp.Body.Close()
		if err != nil || resp.StatusCode != http.StatusOK {
			return fmt.Errorf("GET logs: %s, %v", resp.Status, err)
		}
		after = page.Pagination.NextAfterLine
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(interval):
		}
	}
}
