package main

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/spool-run/spool/client"
	"github.com/spool-run/spool/internal/demo"
	"github.com/spool-run/spool/internal/store"
	"github.com/spool-run/spool/internal/store/storekit"
)

// storage runs a 10,000-line job and counts the items stored per 1,000
// lines, and the items a read of lines 9,000-10,000 fetches.
func storage(ctx context.Context, cl *demo.Local, job emitter) (per1000 float64, replay int, err error) {
	id, err := runJob(ctx, cl.Client, client.SubmitParams{Argv: job.lines(10000)})
	if err != nil {
		return 0, 0, err
	}
	items, err := countItems(ctx, cl.Client, id)
	if err != nil {
		return 0, 0, err
	}
	stats := &store.ReadStats{}
	for _, err := range storekit.Read(ctx, cl.Server.Store(), store.ReadRequest{JobID: id, FromLine: 9000, Stats: stats}) {
		if err != nil {
			return 0, 0, err
		}
	}
	return float64(items) / 10, stats.ItemsRead, nil
}

// countItems counts the stored items of a job's log: the writes it took.
func countItems(ctx context.Context, c *client.Client, id string) (int, error) {
	n := 0
	for _, err := range c.Events(ctx, id, client.StreamOptions{}).Batches() {
		if err != nil {
			return 0, err
		}
		n++
	}
	return n, nil
}

// runJob submits a job and waits for it to succeed.
func runJob(ctx context.Context, c *client.Client, s client.SubmitParams) (string, error) {
	job, _, err := c.Submit(ctx, s)
	if err != nil {
		return "", err
	}
	return job.ID, waitDone(ctx, c, job.ID)
}

// followers is how many jobs waitAll follows at once.
const followers = 32

// waitAll waits for every job of ids to succeed, following several at once
// in the order given (so a measurement ends when the last job does, not a
// stream's round trip per job later), and calls done after each.
func waitAll(ctx context.Context, c *client.Client, ids []string, done func()) error {
	var (
		next atomic.Int64
		mu   sync.Mutex
		wg   sync.WaitGroup
		errs []error
	)
	for range min(followers, len(ids)) {
		wg.Go(func() {
			for i := next.Add(1) - 1; i < int64(len(ids)); i = next.Add(1) - 1 {
				err := waitDone(ctx, c, ids[i])
				mu.Lock()
				errs = append(errs, err)
				if err == nil && done != nil {
					done()
				}
				mu.Unlock()
				if err != nil {
					return
				}
			}
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

// waitDone follows a job's events (none are kept) until it ends.
func waitDone(ctx context.Context, c *client.Client, id string) error {
	s := c.Events(ctx, id, client.StreamOptions{Follow: true, FromLine: 1 << 40})
	for _, err := range s.Batches() {
		if err != nil {
			return err
		}
	}
	if j := s.Finished(); j == nil || j.Result.ExitCode != 0 || j.Result.Error != "" {
		return fmt.Errorf("job %s did not succeed: %v", id, j.Result)
	}
	return nil
}
