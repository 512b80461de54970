package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os/exec"
	"sync"
	"time"

	"github.com/spool-run/spool/client"
	"github.com/spool-run/spool/internal/demo"
)

// noopSlots is how many jobs the worker runs at once in the no-op
// measurement, and how many processes the baseline starts at once.
const noopSlots = 20

// compareNoop measures the whole overhead of a job: n jobs that run
// `true`, all waiting for a worker with noopSlots slots, against the
// rate at which this machine starts and waits for `true` itself,
// noopSlots at a time, measured just before. The ratio is the share of
// the machine's process-start rate spool keeps.
func compareNoop(ctx context.Context, n int, log *slog.Logger) error {
	procs, err := processStartRate(ctx, n)
	if err != nil {
		return err
	}
	cl, err := demo.StartLocal(ctx, demo.LocalOptions{Concurrency: noopSlots, Log: log})
	if err != nil {
		return err
	}
	defer cl.Stop()
	jobs, _, err := noopJobRate(ctx, cl.Client, n, 0)
	if err != nil {
		return err
	}
	fmt.Printf("no-op jobs (`true`), %d slots: %6.0f jobs/s; the machine starts %6.0f processes/s %d at a time: %.0f%% of it\n",
		noopSlots, jobs, procs, noopSlots, 100*jobs/procs)
	return nil
}

// processStartRate starts and waits for n `true` processes, noopSlots at
// a time, and returns how many it ran a second.
func processStartRate(ctx context.Context, n int) (float64, error) {
	return processRate(ctx, n, noopSlots, []string{"true"})
}

// processRate runs n processes of argv, slots at a time, reading their
// output and throwing it away, and returns how many it ran a second: what
// this machine does with the same jobs without spool.
func processRate(ctx context.Context, n, slots int, argv []string) (float64, error) {
	work := make(chan struct{})
	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		firstErr error
	)
	start := time.Now()
	for range slots {
		wg.Go(func() {
			for range work {
				cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
				cmd.Stdout = io.Discard // through a pipe, read as it comes
				if err := cmd.Run(); err != nil {
					mu.Lock()
					firstErr = err
					mu.Unlock()
				}
			}
		})
	}
	for range n {
		work <- struct{}{}
	}
	close(work)
	wg.Wait()
	return float64(n) / sinceStart(start), firstErr
}

// noopJobRate submits n jobs that run `true` to a paused queue, then
// resumes it and returns how many ended a second from the resume to the
// last end: the worker's and the server's work per job, not the submits'.
// With the server's process id, it also says where the CPU of a job went
// from the resume on (cpuUse.perJob).
func noopJobRate(ctx context.Context, c *client.Client, n, serverPID int) (float64, string, error) {
	const queue = "default" // the one the local worker polls
	if _, err := c.PauseQueue(ctx, queue); err != nil {
		return 0, "", err
	}
	ids := make([]string, n)
	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		firstErr error
	)
	for w := range 8 {
		wg.Go(func() {
			for i := w; i < n; i += 8 {
				j, _, err := c.Submit(ctx, client.SubmitParams{Queue: queue, Argv: []string{"true"}})
				if err != nil {
					mu.Lock()
					firstErr = err
					mu.Unlock()
					return
				}
				ids[i] = j.ID
			}
		})
	}
	wg.Wait()
	if firstErr != nil {
		return 0, "", firstErr
	}
	start, cpu := time.Now(), cpuNow(serverPID, "")
	if _, err := c.ResumeQueue(ctx, queue); err != nil {
		return 0, "", err
	}
	if err := waitQueue(ctx, c, queue, n); err != nil {
		return 0, "", err
	}
	used := cpu.perJob(cpuNow(serverPID, ""), n, "worker", "commands")
	// The run ended when its last job did, as the server recorded it (the
	// server runs on this machine's clock), not when the wait above next
	// looked.
	end, err := lastFinished(ctx, c, queue)
	if err != nil {
		return 0, "", err
	}
	return float64(n) / end.Sub(start).Seconds(), used, nil
}

// lastFinished is when the last job of queue to finish did.
func lastFinished(ctx context.Context, c *client.Client, queue string) (time.Time, error) {
	var last time.Time
	for j, err := range c.Jobs(ctx, client.ListParams{Queue: queue, PageSize: 1000}) {
		if err != nil {
			return time.Time{}, err
		}
		if j.Result != nil && j.Result.FinishedAt.After(last) {
			last = j.Result.FinishedAt
		}
	}
	if last.IsZero() {
		return last, fmt.Errorf("no job of queue %s has finished", queue)
	}
	return last, nil
}

// waitQueue waits until n jobs of queue have ended, all of them
// successfully, asking the queue's counts every tenth of a second: one call
// however many jobs, where following each job would cost the server a
// stream per job, more than a no-op job itself.
func waitQueue(ctx context.Context, c *client.Client, queue string, n int) error {
	for {
		qs, _, err := c.Queues(ctx)
		if err != nil {
			return err
		}
		for _, q := range qs {
			if q.Name != queue {
				continue
			}
			if bad := q.Failed + q.Cancelled; bad > 0 {
				return fmt.Errorf("%d jobs of queue %s did not succeed", bad, queue)
			}
			if q.Succeeded >= n {
				return nil
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
}
