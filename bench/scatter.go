package main

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/spool-run/spool"
	"github.com/spool-run/spool/client"
	"github.com/spool-run/spool/internal/demo"
	"github.com/spool-run/spool/itembatch"
)

// scatterResult is what a scatter costs on one store.
type scatterResult struct {
	itemsPerSecond   float64 // reading, batching and storing the items
	batchesPerSecond float64 // batches run to the end (each runs `true`)
	jobsPerSecond    float64 // the baseline: as many plain jobs, submitted one by one
}

// compareScatters measures a scatter of items items in batches of
// perBatch on SQLite and, when pgURL is not empty, on PostgreSQL.
func compareScatters(ctx context.Context, pgURL string, sz sizes, log *slog.Logger) error {
	fmt.Printf("\nscatter of %d items in batches of %d (%d batch jobs, each runs `true`); the baseline submits as many plain jobs one by one\n",
		sz.scatterItems, sz.scatterBatch, sz.scatterItems/sz.scatterBatch)
	t := newTable("scatter", runCommand(), []int{-12, 22, 18, 20}, "store", "start: items/s", "run: batches/s", "plain jobs: jobs/s", "batches vs plain jobs")
	return eachStore(ctx, pgURL, sz, log, func(pg bool, _ float64, cl *demo.Local) error {
		r, err := measureScatter(ctx, cl, sz.scatterItems, sz.scatterBatch)
		if err != nil {
			return err
		}
		t.row(storeName(pg), fmt.Sprintf("%.0f", r.itemsPerSecond), fmt.Sprintf("%.0f", r.batchesPerSecond),
			fmt.Sprintf("%.0f", r.jobsPerSecond), fmt.Sprintf("%.2fx", r.batchesPerSecond/r.jobsPerSecond))
		return nil
	})
}

// measureScatter starts a scatter of n items (JSON Lines, about 60 bytes
// each, as a file listing would be) in batches of per, then waits for it.
func measureScatter(ctx context.Context, cl *demo.Local, n, per int) (scatterResult, error) {
	var r scatterResult
	var lines strings.Builder
	for i := range n {
		fmt.Fprintf(&lines, `{"key":"photos/2026/11/img-%07d.png","size":%d}`+"\n", i, 1000+i%5000)
	}
	start := time.Now()
	items, err := itembatch.ReadItems(strings.NewReader(lines.String()))
	if err != nil {
		return r, err
	}
	batches, _, err := itembatch.Split(items, itembatch.Config{MaxItems: per})
	if err != nil {
		return r, err
	}
	raw := make([]json.RawMessage, len(batches))
	for i, b := range batches {
		raw[i] = b.JSON()
	}
	sc, err := cl.Client.StartScatter(ctx, client.ScatterParams{Job: client.SubmitParams{Argv: []string{"true"}}, Batches: raw})
	if err != nil {
		return r, err
	}
	r.itemsPerSecond = float64(n) / sinceStart(start)
	sc, err = cl.Client.FollowScatter(ctx, sc.ID, 20*time.Millisecond, nil)
	if err != nil {
		return r, err
	}
	if sc.State != spool.ScatterSucceeded {
		return r, fmt.Errorf("the scatter ended %s: %s", sc.State, sc.Error)
	}
	r.batchesPerSecond = float64(len(batches)) / sinceStart(start)

	start = time.Now()
	ids := make([]string, len(batches))
	for i := range ids {
		j, _, err := cl.Client.Submit(ctx, client.SubmitParams{Argv: []string{"true"}})
		if err != nil {
			return r, err
		}
		ids[i] = j.ID
	}
	if err := waitAll(ctx, cl.Client, ids, nil); err != nil {
		return r, err
	}
	r.jobsPerSecond = float64(len(ids)) / sinceStart(start)
	return r, nil
}
