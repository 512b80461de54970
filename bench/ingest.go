package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/spool-run/spool"
	"github.com/spool-run/spool/client"
	"github.com/spool-run/spool/internal/config"
	"github.com/spool-run/spool/internal/demo"
	"github.com/spool-run/spool/internal/ingest/ingesttest"
	"github.com/spool-run/spool/internal/store"
	"github.com/spool-run/spool/internal/store/storekit"
)

// The ingest bench (embedded SQLite store) sends CloudWatch Logs through the Firehose endpoint as
// Firehose would, from ingestSources log streams at once, each delivery
// holding ingestPerDelivery events of one stream (Firehose gathers about a
// megabyte), and measures lines/s stored and stored items per 1,000 lines,
// batched (the defaults) against unbatched (max_batch_size 1) in the same
// run. A second pass sends every delivery again, as Firehose's retries do,
// and measures how fast duplicates are told apart.
const (
	ingestSources     = 10
	ingestPerDelivery = 1000
)

type ingestResult struct {
	linesPerSecond, repeatPerSecond, itemsPer1000 float64
}

func compareIngest(ctx context.Context, sz sizes, log *slog.Logger) error {
	fmt.Printf("\nlogs from elsewhere: CloudWatch Logs through POST /api/v1/ingest/firehose, %d log streams at once, %d events a delivery\n\n",
		ingestSources, ingestPerDelivery)
	row := newTable("ingest", runCommand(), figureWidths, "", "batched", "unbatched", "batched vs unbatched").row
	var res [2]ingestResult
	for i, batched := range []bool{true, false} {
		cl, err := demo.StartLocal(ctx, demo.LocalOptions{Log: log, Configure: func(c *config.Config) {
			if !batched {
				c.Execution.Batching.MaxBatchSize = 1
			}
		}})
		if err != nil {
			return err
		}
		res[i], err = measureIngest(ctx, cl, sz.ingestDeliveries)
		_ = cl.Stop()
		if err != nil {
			return err
		}
	}
	b, u := res[0], res[1]
	row("stored items per 1,000 lines", fmt.Sprintf("%.1f", b.itemsPer1000), fmt.Sprintf("%.1f", u.itemsPer1000),
		fmt.Sprintf("%.1fx fewer writes", u.itemsPer1000/b.itemsPer1000))
	row(fmt.Sprintf("lines/s ingested, %d streams", ingestSources), fmt.Sprintf("%.0f", b.linesPerSecond), fmt.Sprintf("%.0f", u.linesPerSecond),
		fmt.Sprintf("%.1fx the throughput", b.linesPerSecond/u.linesPerSecond))
	row("lines/s of a repeated delivery (all duplicates)", fmt.Sprintf("%.0f", b.repeatPerSecond), fmt.Sprintf("%.0f", u.repeatPerSecond), "")
	return nil
}

// measureIngest sends deliveries deliveries per stream, from every stream
// at once, then all of them again.
func measureIngest(ctx context.Context, cl *demo.Local, deliveries int) (ingestResult, error) {
	_, key, err := cl.Client.CreateKey(ctx, client.KeyParams{Name: "bench-ingest", Role: spool.RoleIngest})
	if err != nil {
		return ingestResult{}, err
	}
	bodies := make([][][]byte, ingestSources)
	for s := range bodies {
		for d := range deliveries {
			evs := make([]ingesttest.Event, ingestPerDelivery)
			for i := range evs {
				n := d*ingestPerDelivery + i
				evs[i] = ingesttest.Event{ID: fmt.Sprintf("%056d", n), Timestamp: 1_764_000_000_000 + int64(n),
					Message: fmt.Sprintf("%s INFO request %d served in 12 ms, status 200, user agent curl/8.5.0", time.UnixMilli(1_764_000_000_000+int64(n)).UTC().Format(time.RFC3339Nano), n)}
			}
			msg := ingesttest.DataMessage("/ecs/bench", fmt.Sprintf("web/%d", s), evs...)
			bodies[s] = append(bodies[s], ingesttest.FirehoseBody(fmt.Sprint(s, "-", d), time.Now().UnixMilli(), ingesttest.Record(msg)))
		}
	}
	send := func() (float64, error) {
		start := time.Now()
		var (
			wg   sync.WaitGroup
			mu   sync.Mutex
			errs []error
		)
		for s := range bodies {
			wg.Go(func() {
				for _, body := range bodies[s] {
					if err := postFirehose(ctx, cl.Server.URL(), key, body); err != nil {
						mu.Lock()
						errs = append(errs, err)
						mu.Unlock()
						return
					}
				}
			})
		}
		wg.Wait()
		if len(errs) > 0 {
			return 0, errs[0]
		}
		return float64(ingestSources*deliveries*ingestPerDelivery) / time.Since(start).Seconds(), nil
	}
	var r ingestResult
	if r.linesPerSecond, err = send(); err != nil {
		return r, err
	}
	if r.repeatPerSecond, err = send(); err != nil {
		return r, err
	}
	jobs, _, err := cl.Client.JobsPage(ctx, client.ListParams{Source: "/ecs/bench:web/0"})
	if err != nil || len(jobs) != 1 {
		return r, fmt.Errorf("the bench's first stream has %d jobs (%v), want 1", len(jobs), err)
	}
	lines := jobs[0].LineCount
	if want := int64(deliveries * ingestPerDelivery); lines != want {
		return r, fmt.Errorf("the bench's first stream has %d lines, want %d", lines, want)
	}
	items := 0
	for _, err := range storekit.Read(ctx, cl.Server.Store(), store.ReadRequest{JobID: jobs[0].ID, FromSequence: 1}) {
		if err != nil {
			return r, err
		}
		items++
	}
	r.itemsPer1000 = float64(items) * 1000 / float64(lines)
	return r, nil
}

// postFirehose sends one delivery as Firehose does (gzip-encoded, the key
// in its header) and fails unless it is taken.
func postFirehose(ctx context.Context, base, key string, body []byte) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+"/api/v1/ingest/firehose", bytes.NewReader(ingesttest.Gzip(body)))
	if err != nil {
		return err
	}
	req.Header.Set("X-Amz-Firehose-Access-Key", key)
	req.Header.Set("Content-Encoding", "gzip")
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	answer, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("delivery refused: %s %s", resp.Status, answer)
	}
	return nil
}
