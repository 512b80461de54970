package cli

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/spool-run/spool"
)

// batchingFlags are a job's own batching of its output (`spool submit
// --flush-interval 200ms --batch-lines 10`). The server holds the bounds
// and refuses what is beyond them; only what is no batching at all is
// refused here.
type batchingFlags struct {
	flushInterval time.Duration
	batchLines    int
}

func (f *batchingFlags) register(cmd *cobra.Command) {
	fl := cmd.Flags()
	fl.DurationVar(&f.flushInterval, "flush-interval", 0, "send the job's output at least this often (e.g. 200ms, 5s), within the server's bounds for jobs (default: the server's, 2s)")
	fl.IntVar(&f.batchLines, "batch-lines", 0, "store the job's output at most this many lines a batch, within the server's bounds for jobs (default: the server's, 50)")
}

// batching is the flags as the job's Batching.
func (f *batchingFlags) batching() (spool.Batching, error) {
	switch {
	case f.flushInterval < 0:
		return spool.Batching{}, fmt.Errorf("--flush-interval %s is negative: give how often to send output (200ms, 5s), or leave it out for the server's", f.flushInterval)
	case f.batchLines < 0:
		return spool.Batching{}, fmt.Errorf("--batch-lines %d is negative: give how many lines a batch may hold, or leave it out for the server's", f.batchLines)
	}
	return spool.Batching{FlushInterval: f.flushInterval, MaxBatchSize: f.batchLines}, nil
}
