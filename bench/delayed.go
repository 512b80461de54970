package main

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/spool-run/spool/client"
)

// goalDelayedLate is how late, at most, jobs submitted for the same
// second may all be queued after it.
const goalDelayedLate = time.Second

// delayedQueue is the queue the delayed jobs go to.
const delayedQueue = "delayed"

// delayedGoal submits n jobs due in the same second, on SQLite and, when
// pgURL is set, on PostgreSQL, and says how long after that second the
// last of them was queued: the promoter's round, through a real server.
func delayedGoal(ctx context.Context, pgURL string, n int, log *slog.Logger) ([]goalRow, error) {
	var onSQLite, onPostgres time.Duration
	err := onServer(ctx, "", log, func(r *remote) (err error) {
		onSQLite, err = delayedRun(ctx, r.Client, n)
		return err
	})
	if err != nil {
		return nil, err
	}
	baseline, met := "(no PostgreSQL: -postgres '')", onSQLite <= goalDelayedLate
	if pgURL != "" {
		db, drop, err := benchDatabase(ctx, pgURL)
		if err != nil {
			return nil, fmt.Errorf("PostgreSQL at %s: %w (start one, or give -postgres URL)", pgURL, err)
		}
		defer drop()
		if err := onServer(ctx, db, log, func(r *remote) (err error) {
			onPostgres, err = delayedRun(ctx, r.Client, n)
			return err
		}); err != nil {
			return nil, err
		}
		baseline, met = "PostgreSQL: "+onPostgres.Round(time.Millisecond).String(), met && onPostgres <= goalDelayedLate
	}
	return []goalRow{{
		measure:  fmt.Sprintf("%s delayed jobs due in one second: all queued", thousands(float64(n))),
		spool:    onSQLite.Round(time.Millisecond).String() + " after it",
		baseline: baseline,
		goal:     "<= " + goalDelayedLate.String(),
		met:      met,
	}}, nil
}

// delayedRun submits n jobs due at a second far enough ahead for the
// submits to end before it, then watches the queue: how long after that
// second all n were queued. A job queued early is an error.
func delayedRun(ctx context.Context, c *client.Client, n int) (time.Duration, error) {
	const batch = 1000
	due := time.Now().Add(time.Duration(n/batch+5) * time.Second).Truncate(time.Second)
	jobs := make([]client.SubmitParams, batch)
	for i := range jobs {
		jobs[i] = client.SubmitParams{Queue: delayedQueue, Argv: []string{"true"}, RunAt: due}
	}
	for done := 0; done < n; done += batch {
		rs, err := c.SubmitBatch(ctx, jobs[:min(batch, n-done)])
		if err != nil {
			return 0, err
		}
		for _, r := range rs {
			if r.Err != nil {
				return 0, r.Err
			}
		}
	}
	if time.Now().After(due) {
		return 0, fmt.Errorf("submitting %d jobs took past their time (%v): the machine is too busy to measure this", n, due)
	}
	stop := progress(func() string { return fmt.Sprintf("%d delayed jobs due at %s", n, due.Format(time.TimeOnly)) })
	defer stop()
	for {
		qs, _, err := c.Queues(ctx)
		if err != nil {
			return 0, err
		}
		queued := 0
		for _, q := range qs {
			if q.Name == delayedQueue {
				queued = q.Queued
			}
		}
		now := time.Now()
		switch {
		case queued > 0 && now.Before(due):
			return 0, fmt.Errorf("%d jobs queued at %v, before their time %v", queued, now, due)
		case queued == n:
			return now.Sub(due), nil
		}
		time.Sleep(5 * time.Millisecond)
	}
}
