// Package demo is `spool demo`: an embedded server (on the embedded SQLite
// store, in a temporary directory) and worker in one process, one job of
// 10,000 lines followed live and replayed from line 9,000, and the figures
// that show what batching saved.
package demo

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"time"

	"github.com/spool-run/spool"
	"github.com/spool-run/spool/client"
	spoolv1 "github.com/spool-run/spool/gen/spool/v1"
	"github.com/spool-run/spool/internal/events"
	"github.com/spool-run/spool/internal/store"
	"github.com/spool-run/spool/internal/store/storekit"
)

// Options tune the demo.
type Options struct {
	// Lines the job prints (default 10,000).
	Lines int
	// ReplayFrom is the line the replay starts at (default 9,000).
	ReplayFrom int
	// Out receives the demo's report.
	Out io.Writer
	// Live redraws a progress line while following (for terminals).
	Live bool
	// Log receives the server's and worker's logs (nil: discarded).
	Log *slog.Logger
}

// Figures are what the demo measured.
type Figures struct {
	JobID        string
	Lines        int64
	FollowedLive int64 // lines the live follower saw
	FollowTime   time.Duration
	// What the store holds for the job.
	StoredItems   int
	OutputBatches int
	StoredBytes   int64 // encoded payloads, as stored
	OutputBytes   int64 // the job's output, newlines included
	// Unbatched is what one stored item per line (max_batch_size=1) would
	// have written.
	Unbatched int
	// The replay from ReplayFrom.
	ReplayItemsRead int
	ReplayLines     int64
	ReplayFirst     string
	ReplayLast      string
	replayLastLine  int64
}

// WriteReduction is how many times fewer items batching wrote.
func (f Figures) WriteReduction() float64 { return float64(f.Unbatched) / float64(f.StoredItems) }

// BytesPerOutputByte is stored bytes per byte of output.
func (f Figures) BytesPerOutputByte() float64 { return float64(f.StoredBytes) / float64(f.OutputBytes) }

// script prints n lines ("line 1".."line n") in bursts with short pauses,
// so there is something to follow live. Plain POSIX sh, so it runs wherever
// the worker does.
func script(n int) string {
	return fmt.Sprintf(`i=1
while [ $i -le %d ]; do
  echo "line $i"
  [ $((i %% 250)) -eq 0 ] && sleep 0.05
  i=$((i+1))
done
true`, n)
}

// Run runs the demo and reports to o.Out.
func Run(ctx context.Context, o Options) (Figures, error) {
	if o.Lines <= 0 {
		o.Lines = 10000
	}
	if o.ReplayFrom <= 0 || o.ReplayFrom > o.Lines {
		o.ReplayFrom = min(9000, o.Lines)
	}
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	out := o.Out
	// Said before anything starts, so that whoever ran it sees at once
	// that it runs (after `go run` compiled for minutes in silence).
	fmt.Fprintln(out, "spool demo: starting a server and a worker in this process, on the embedded SQLite store")
	started := time.Now()
	cl, err := StartLocal(ctx, LocalOptions{Log: o.Log})
	if err != nil {
		return Figures{}, err
	}
	defer cl.Stop()
	c, srv, tmp := cl.Client, cl.Server, cl.Dir

	fmt.Fprintf(out, "  started in %s, in %s\n\n", time.Since(started).Round(time.Millisecond), tmp)
	job, _, err := c.Submit(ctx, client.SubmitParams{Script: script(o.Lines)})
	if err != nil {
		return Figures{}, err
	}
	f := Figures{JobID: job.ID}
	fmt.Fprintf(out, "submitted job %s: a shell loop printing %d lines\n", f.JobID, o.Lines)
	if err := follow(ctx, c, o, &f); err != nil {
		return f, err
	}
	if err := replay(ctx, c, srv.Store(), o, &f); err != nil {
		return f, err
	}
	if err := measure(ctx, srv.Store(), &f); err != nil {
		return f, err
	}
	report(out, o, f)
	return f, nil
}

// follow watches the job live until it ends.
func follow(ctx context.Context, c *client.Client, o Options, f *Figures) error {
	start := time.Now()
	s := c.Events(ctx, f.JobID, client.StreamOptions{Follow: true, Types: []spool.EventType{spool.EventOutput}})
	var last string
	for ev, err := range s.Batches() {
		if err != nil {
			return fmt.Errorf("following the job: %w", err)
		}
		for _, line := range ev.Lines {
			f.FollowedLive++
			if line.Stream == spool.Stdout {
				last = line.Text
			}
			if o.Live && f.FollowedLive%50 == 0 {
				fmt.Fprintf(o.Out, "\r  following live: %6d / %d lines   %-24s", line.Number, o.Lines, last)
			}
		}
	}
	f.FollowTime = time.Since(start)
	job := s.Finished()
	if job == nil {
		return errors.New("the stream ended before the job did")
	}
	if o.Live {
		fmt.Fprint(o.Out, "\r"+strings.Repeat(" ", 72)+"\r")
	}
	f.Lines = job.LineCount
	fmt.Fprintf(o.Out, "followed it live: %d lines in %s, ending with %q; the job %s\n",
		f.FollowedLive, f.FollowTime.Round(time.Millisecond), last, job.State)
	if job.State != spool.Succeeded {
		return fmt.Errorf("the demo job %s: %s", job.State, job.Result.Error)
	}
	return nil
}

// replay reads the job again from o.ReplayFrom, through the API, and counts
// the stored items the same read fetches from the store.
func replay(ctx context.Context, c *client.Client, st store.JobStore, o Options, f *Figures) error {
	fmt.Fprintf(o.Out, "\nreplaying from line %d:\n", o.ReplayFrom)
	s := c.Events(ctx, f.JobID, client.StreamOptions{FromLine: int64(o.ReplayFrom), Types: []spool.EventType{spool.EventOutput}})
	for ev, err := range s.All() {
		if err != nil {
			return fmt.Errorf("replaying: %w", err)
		}
		for _, line := range ev.Lines {
			if f.ReplayLines == 0 {
				f.ReplayFirst = line.Text
			}
			f.ReplayLast, f.replayLastLine = line.Text, line.Number
			if f.ReplayLines < 3 {
				fmt.Fprintf(o.Out, "  %6d  %s\n", line.Number, line.Text)
			} else if f.ReplayLines == 3 {
				fmt.Fprintln(o.Out, "     ...")
			}
			f.ReplayLines++
		}
	}
	stats := &store.ReadStats{}
	for _, err := range storekit.Read(ctx, st, store.ReadRequest{JobID: f.JobID, FromLine: int64(o.ReplayFrom), Stats: stats}) {
		if err != nil {
			return err
		}
	}
	f.ReplayItemsRead = stats.ItemsRead
	fmt.Fprintf(o.Out, "  %6d  %s\n", f.replayLastLine, f.ReplayLast)
	return nil
}

// measure counts what the store holds for the job.
func measure(ctx context.Context, st store.JobStore, f *Figures) error {
	for ev, err := range storekit.Read(ctx, st, store.ReadRequest{JobID: f.JobID, FromSequence: 1}) {
		if err != nil {
			return err
		}
		f.StoredItems++
		payload, err := events.Encode(ev)
		if err != nil {
			return err
		}
		f.StoredBytes += int64(len(payload))
		if ev.GetEventType() == spoolv1.EventType_EVENT_TYPE_OUTPUT_BATCH {
			f.OutputBatches++
			for _, item := range ev.GetOutputBatch().GetOutputs() {
				f.OutputBytes += int64(len(item.GetOutput())) + 1
			}
			f.Unbatched += len(ev.GetOutputBatch().GetOutputs())
		} else {
			f.Unbatched++
		}
	}
	return nil
}

func report(out io.Writer, o Options, f Figures) {
	fmt.Fprintf(out, `
what batching saved:
  output lines                     %6d
  items stored                     %6d   (%d output batches, plus the process start and end)
  items one per line would store   %6d   -> %.1fx fewer writes
  items read to replay %d+       %6d   for %d lines
  bytes stored per byte of output  %6.2f   (batches are compressed with S2)
`, f.Lines, f.StoredItems, f.OutputBatches, f.Unbatched, f.WriteReduction(), o.ReplayFrom, f.ReplayItemsRead, f.ReplayLines, f.BytesPerOutputByte())
	tryIt(out, o)
}

// tryIt tells how to do the same by hand: the demo ran a server and a
// worker itself, so both must be named, or the submitted job would wait
// for a worker no one started.
func tryIt(out io.Writer, o Options) {
	fmt.Fprintf(out, `
do it yourself, each in its own terminal:
  spool server
  spool worker
  spool submit --follow --shell 'seq 1 %d'
  spool logs JOB --from %d
`, o.Lines, o.ReplayFrom)
}
