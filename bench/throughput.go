package main

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/spool-run/spool/client"
	"github.com/spool-run/spool/internal/demo"
)

// throughput runs jobs at once, each printing lines as fast as it can, and
// returns the lines per second from the first submit to the last job done:
// capture, batching, the outbox, the API and the store, end to end.
func throughput(ctx context.Context, cl *demo.Local, job emitter, jobs, lines int) (float64, error) {
	start := time.Now()
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		errs []error
	)
	for range jobs {
		wg.Go(func() {
			_, err := runJob(ctx, cl.Client, client.SubmitParams{Argv: job.lines(lines)})
			mu.Lock()
			errs = append(errs, err)
			mu.Unlock()
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return 0, err
	}
	return float64(jobs*lines) / sinceStart(start), nil
}
