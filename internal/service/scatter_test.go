package service_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/spool-run/spool"
	"github.com/spool-run/spool/client"
	"github.com/spool-run/spool/internal/scatter"
	"github.com/spool-run/spool/internal/store/backends/awsstore/awstest"
	"github.com/spool-run/spool/internal/store/backends/pgstore/pgtest"
	"github.com/spool-run/spool/server"
	"github.com/spool-run/spool/spooltest"
	"github.com/spool-run/spool/worker"
)

// tokenKey signs the task tokens of servers on shared stores.
const tokenKey = "MDEyMzQ1Njc4OTAxMjM0NTY3ODkwMTIzNDU2Nzg5MDE="

// testStore is a store the scatter tests run on: its name, whether it
// survives a restart, whether several servers may share it, and what makes
// a server's configuration use it (a fresh one per call of store).
type testStore struct {
	name               string
	persistent, shared bool
	store              func(t *testing.T) func(c *server.Config)
}

var testStores = []testStore{
	{"memory", false, false, func(*testing.T) func(c *server.Config) {
		return func(c *server.Config) { c.Store.Type = "memory" }
	}},
	{"sqlite", true, false, func(*testing.T) func(c *server.Config) { return func(*server.Config) {} }},
	{"postgres", true, true, func(t *testing.T) func(c *server.Config) {
		url := pgtest.NewDatabase(t)
		return func(c *server.Config) {
			c.Server.TokenKey, c.Store.Type, c.Store.Postgres.URL = tokenKey, "postgres", url
		}
	}},
	{"aws", true, true, func(t *testing.T) func(c *server.Config) {
		aws := awstest.Shared(t).NewConfig(t)
		return func(c *server.Config) {
			c.Server.TokenKey, c.Store.Type = tokenKey, "aws"
			c.Store.AWS = server.AWS{DynamoDBEndpoint: aws.DynamoDBEndpoint, SQSEndpoint: aws.SQSEndpoint,
				JobsTable: aws.JobsTable, EventsTable: aws.EventsTable, QueuePrefix: aws.QueuePrefix,
				AutoCreateQueues: true, DeadLetterCheckInterval: aws.DeadLetterCheckInterval}
		}
	}},
}

// onEveryStore runs test on a server over each store: memory, SQLite,
// PostgreSQL and AWS (on the package's shared AWS test servers, fresh
// tables and queues for each test).
func onEveryStore(t *testing.T, test func(t *testing.T, srv *spooltest.Server)) {
	onStores(t, func(testStore) bool { return true }, func(t *testing.T, set func(*server.Config)) {
		test(t, newServer(t, set))
	})
}

// onStores runs test over each store that want keeps, giving it what
// configures a server to use the store (the same store each time). The
// calling test runs beside the package's other tests: each has servers and
// stores of its own, and most of its time is spent waiting on them.
func onStores(t *testing.T, want func(testStore) bool, test func(t *testing.T, set func(*server.Config))) {
	t.Parallel()
	for _, st := range testStores {
		if !want(st) {
			continue
		}
		t.Run(st.name, func(t *testing.T) {
			t.Parallel()
			test(t, st.store(t))
		})
	}
}

// newServer starts a server on the store set configures, with short leases
// and the tests' admin key (the same on every server of a shared store).
func newServer(t *testing.T, set func(*server.Config)) *spooltest.Server {
	return spooltest.NewServer(t, spooltest.Config{Server: func(c *server.Config) {
		c.Execution.HeartbeatInterval = time.Second
		c.Jobs.Lease = 3 * time.Second
		c.Auth.AdminKey = "spool_scatter-tests-0123456789abcdefghijklmnopqrstuvwxyz"
		set(c)
	}})
}

// batches returns n batches of k items each ({"k":0}, {"k":1}, …).
func batches(n, k int) []json.RawMessage {
	out := make([]json.RawMessage, n)
	for i := range out {
		items := make([]string, k)
		for j := range items {
			items[j] = fmt.Sprintf(`{"k":%d}`, i*k+j)
		}
		out[i] = json.RawMessage("[" + strings.Join(items, ",") + "]")
	}
	return out
}

// countItems is a batch command: it checks its environment against its
// input and leaves {"items": n, "index": i} as its result.
const countItems = `set -e
n=$(grep -o '"k":' | wc -l)
grep -q "\"batch_index\":$SPOOL_BATCH_INDEX," "$SPOOL_BATCH_FILE"
grep -q "\"scatter_id\":\"$SPOOL_SCATTER_ID\"" "$SPOOL_BATCH_FILE"
grep -q "\"batch_count\":$SPOOL_BATCH_COUNT," "$SPOOL_BATCH_FILE"
printf '{"items":%d,"index":%d}' "$n" "$SPOOL_BATCH_INDEX" > "$SPOOL_RESULT"`

// gatherDoc is what a gather job reads.
type gatherDoc struct {
	BatchResults  map[string]json.RawMessage `json:"batch_results"`
	FailedBatches []int32                    `json:"failed_batches"`
	BatchCount    int32                      `json:"batch_count"`
	BatchInput    json.RawMessage            `json:"batch_input"`
	ScatterID     string                     `json:"scatter_id"`
}

func follow(t *testing.T, c *client.Client, id string) *spool.Scatter {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	sc, err := c.FollowScatter(ctx, id, 100*time.Millisecond, nil)
	if err != nil {
		t.Fatalf("following scatter %s: %v (last seen %v)", id, err, sc)
	}
	return sc
}

func wantProgress(t *testing.T, sc *spool.Scatter, state spool.ScatterState, succeeded, failed, cancelled int) {
	t.Helper()
	p := sc.Progress
	if sc.State != state || p.Succeeded != succeeded || p.Failed != failed || p.Cancelled != cancelled ||
		p.Queued+p.Running+p.Waiting != 0 {
		t.Fatalf("scatter %s ended %s (%s) with %+v; want %s with %d succeeded, %d failed, %d cancelled",
			sc.ID, sc.State, sc.Error, p, state, succeeded, failed, cancelled)
	}
}

// TestScatterBatchesAndGather: every batch runs once with its items, batch
// input and environment; the gather gets every batch's result.
func TestScatterBatchesAndGather(t *testing.T) {
	onEveryStore(t, func(t *testing.T, srv *spooltest.Server) {
		spooltest.NewWorker(t, srv, worker.Config{Concurrency: 4})
		c := srv.Client()
		sc, err := c.StartScatter(context.Background(), client.ScatterParams{
			Job:        client.SubmitParams{Script: countItems},
			Batches:    batches(5, 3),
			BatchInput: json.RawMessage(`{"width": 800}`),
			Gather:     `cat > "$SPOOL_RESULT"`,
		})
		if err != nil {
			t.Fatal(err)
		}
		if p := sc.Progress; p.BatchCount != 5 || p.ItemCount != 15 {
			t.Fatalf("new scatter's progress %v, want 5 batches of 15 items", p)
		}
		sc = follow(t, c, sc.ID)
		wantProgress(t, sc, spool.ScatterSucceeded, 5, 0, 0)
		if sc.Progress.ItemsDone != 15 {
			t.Fatalf("items done %d, want 15", sc.Progress.ItemsDone)
		}
		gather, err := c.Job(context.Background(), sc.GatherJobID)
		if err != nil {
			t.Fatal(err)
		}
		var doc gatherDoc
		if err := json.Unmarshal([]byte(gather.Result.Output), &doc); err != nil {
			t.Fatalf("gather's input %q: %v", gather.Result.Output, err)
		}
		if doc.BatchCount != 5 || len(doc.BatchResults) != 5 || len(doc.FailedBatches) != 0 || string(doc.BatchInput) != `{"width":800}` || doc.ScatterID != sc.ID {
			t.Fatalf("gather read %+v", doc)
		}
		for i := range 5 {
			if got, want := string(doc.BatchResults[fmt.Sprint(i)]), fmt.Sprintf(`{"items":3,"index":%d}`, i); got != want {
				t.Fatalf("batch %d's result %s, want %s", i, got, want)
			}
		}
		wantMetrics(t, srv, `spool_scatter_batches_created_total{queue="default"} 5`, `spool_scatter_batches_started_total{queue="default"} 5`,
			`spool_scatter_batches_completed_total{queue="default"} 5`)
		batches, next, err := c.ScatterBatches(context.Background(), sc.ID, 0, 0)
		if err != nil || len(batches) != 5 || next != 0 {
			t.Fatalf("batches: %d, next %d, %v", len(batches), next, err)
		}
		for i, b := range batches {
			if b.Job.ID != scatter.BatchJobID(sc.ID, int32(i)) || b.ItemCount != 3 ||
				b.Job.State != spool.Succeeded || b.Job.Attempt != 1 {
				t.Fatalf("batch %d: %v", i, b)
			}
		}
	})
}

// wantMetrics fails unless the server's /metrics has every line in want.
func wantMetrics(t *testing.T, srv *spooltest.Server, want ...string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, srv.URL+"/metrics", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+srv.AdminKey)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, w := range want {
		if !strings.Contains(string(body), w) {
			t.Fatalf("/metrics lacks %q", w)
		}
	}
}

// TestScatterConcurrencyLimit: no more batches run at once than allowed.
func TestScatterConcurrencyLimit(t *testing.T) {
	onEveryStore(t, func(t *testing.T, srv *spooltest.Server) {
		spooltest.NewWorker(t, srv, worker.Config{Concurrency: 6})
		c := srv.Client()
		sc, err := c.StartScatter(context.Background(), client.ScatterParams{
			Job: client.SubmitParams{Script: "sleep 0.3"}, Batches: batches(6, 1), MaxConcurrency: 2,
		})
		if err != nil {
			t.Fatal(err)
		}
		sc = follow(t, c, sc.ID)
		wantProgress(t, sc, spool.ScatterSucceeded, 6, 0, 0)
		wantAtMostAtOnce(t, c, sc, 2)
	})
}

// wantAtMostAtOnce fails if more than limit of a scatter's batches ran at
// the same time, by their jobs' start and end times.
func wantAtMostAtOnce(t *testing.T, c *client.Client, sc *spool.Scatter, limit int) {
	t.Helper()
	type span struct{ from, to time.Time }
	var spans []span
	for i := range int32(sc.Progress.BatchCount) {
		j, err := c.Job(context.Background(), scatter.BatchJobID(sc.ID, i))
		if err != nil {
			t.Fatal(err)
		}
		spans = append(spans, span{j.Result.StartedAt, j.Result.FinishedAt})
	}
	for _, s := range spans {
		running := 0
		for _, o := range spans {
			if !o.from.After(s.from) && o.to.After(s.from) {
				running++
			}
		}
		if running > limit {
			t.Fatalf("%d batches ran at once, the limit is %d: %v", running, limit, spans)
		}
	}
}

// TestScatterConcurrencyAcrossServers: two servers on one store, each with
// its worker, both driving the scatter; the limit holds for the whole.
func TestScatterConcurrencyAcrossServers(t *testing.T) {
	onStores(t, func(st testStore) bool { return st.shared }, func(t *testing.T, set func(*server.Config)) {
		var c *client.Client
		for i := range 2 {
			srv := newServer(t, set)
			spooltest.NewWorker(t, srv, worker.Config{Concurrency: 4})
			if i == 0 {
				c = srv.Client()
			}
		}
		sc, err := c.StartScatter(context.Background(), client.ScatterParams{
			Job: client.SubmitParams{Script: "sleep 0.3"}, Batches: batches(8, 1), MaxConcurrency: 2,
		})
		if err != nil {
			t.Fatal(err)
		}
		sc = follow(t, c, sc.ID)
		wantProgress(t, sc, spool.ScatterSucceeded, 8, 0, 0)
		wantAtMostAtOnce(t, c, sc, 2)
	})
}

// failOdd fails the batches with an odd index.
const failOdd = `test $((SPOOL_BATCH_INDEX % 2)) -eq 0`

// TestScatterToleratedFailures: failures up to the tolerance (count or
// percentage, reaching it included) let the scatter gather; one more fails
// it, and the batches not started then never run.
func TestScatterToleratedFailures(t *testing.T) {
	count := func(n int) *int { return &n }
	pct := func(p float32) *float32 { return &p }
	onEveryStore(t, func(t *testing.T, srv *spooltest.Server) {
		spooltest.NewWorker(t, srv, worker.Config{Concurrency: 4})
		c := srv.Client()
		for _, tc := range []struct {
			name  string
			count *int
			pct   *float32
			ok    bool
		}{
			{"count at the limit", count(2), nil, true},
			{"count past the limit", count(1), nil, false},
			{"percentage at the limit", nil, pct(50), true},
			{"percentage past the limit", nil, pct(49), false},
			{"both, one passed", count(5), pct(25), false},
		} {
			sc, err := c.StartScatter(context.Background(), client.ScatterParams{
				Job: client.SubmitParams{Script: failOdd}, Batches: batches(4, 1), Gather: `cat > "$SPOOL_RESULT"`,
				ToleratedFailureCount: tc.count, ToleratedFailurePercentage: tc.pct,
			})
			if err != nil {
				t.Fatal(err)
			}
			sc = follow(t, c, sc.ID)
			if !tc.ok {
				if sc.State != spool.ScatterFailed || sc.GatherJobID != "" || !strings.Contains(sc.Error, "batches failed") {
					t.Fatalf("%s: scatter %s (%s), gather %q; want failed without a gather", tc.name, sc.State, sc.Error, sc.GatherJobID)
				}
				continue
			}
			wantProgress(t, sc, spool.ScatterSucceeded, 2, 2, 0)
			gather, err := c.Job(context.Background(), sc.GatherJobID)
			if err != nil {
				t.Fatal(err)
			}
			var doc gatherDoc
			if err := json.Unmarshal([]byte(gather.Result.Output), &doc); err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(doc.FailedBatches, []int32{1, 3}) || string(doc.BatchResults["1"]) != "null" {
				t.Fatalf("%s: gather read %+v, want batches 1 and 3 failed", tc.name, doc)
			}
		}

		// One at a time and nothing tolerated: the first failure stops it.
		sc, err := c.StartScatter(context.Background(), client.ScatterParams{
			Job: client.SubmitParams{Script: "exit 3"}, Batches: batches(4, 1), MaxConcurrency: 1,
		})
		if err != nil {
			t.Fatal(err)
		}
		sc = follow(t, c, sc.ID)
		wantProgress(t, sc, spool.ScatterFailed, 0, 1, 3)
		for i := int32(1); i < 4; i++ {
			if _, err := c.Job(context.Background(), scatter.BatchJobID(sc.ID, i)); !errors.Is(err, spool.ErrNotFound) {
				t.Fatalf("batch %d of a scatter that failed before it started has a job: %v", i, err)
			}
		}
	})
}

// TestScatterBadResult: a result that is not JSON fails its batch, saying
// why.
func TestScatterBadResult(t *testing.T) {
	onEveryStore(t, func(t *testing.T, srv *spooltest.Server) {
		spooltest.NewWorker(t, srv, worker.Config{Concurrency: 2})
		c := srv.Client()
		sc, err := c.StartScatter(context.Background(), client.ScatterParams{
			Job: client.SubmitParams{Script: `echo 'not json' > "$SPOOL_RESULT"`}, Batches: batches(1, 1),
		})
		if err != nil {
			t.Fatal(err)
		}
		sc = follow(t, c, sc.ID)
		wantProgress(t, sc, spool.ScatterFailed, 0, 1, 0)
		j, err := c.Job(context.Background(), scatter.BatchJobID(sc.ID, 0))
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(j.Result.Error, "$SPOOL_RESULT is not valid JSON") {
			t.Fatalf("batch failed with %q, want it to say the result is not JSON", j.Result.Error)
		}
		wantMetrics(t, srv, `spool_scatter_batches_failed_total{queue="default"} 1`)
	})
}

// TestScatterCancel: cancelling stops the running batches and never starts
// the waiting ones.
func TestScatterCancel(t *testing.T) {
	onEveryStore(t, func(t *testing.T, srv *spooltest.Server) {
		spooltest.NewWorker(t, srv, worker.Config{Concurrency: 4})
		c := srv.Client()
		sc, err := c.StartScatter(context.Background(), client.ScatterParams{
			Job: client.SubmitParams{Script: "sleep 60"}, Batches: batches(10, 1), MaxConcurrency: 2,
		})
		if err != nil {
			t.Fatal(err)
		}
		waitRunning(t, c, sc.ID, 2)
		sc, err = c.CancelScatter(context.Background(), sc.ID, "changed my mind")
		if err != nil {
			t.Fatal(err)
		}
		if sc.State != spool.ScatterCancelled || !strings.Contains(sc.Error, "changed my mind") {
			t.Fatalf("cancelled scatter: %s %q", sc.State, sc.Error)
		}
		for i := int32(0); i < 2; i++ {
			j := srv.WaitJob(t, scatter.BatchJobID(sc.ID, i))
			if j.State != spool.Cancelled {
				t.Fatalf("running batch %d after the cancel: %s", i, j.State)
			}
		}
		for i := int32(2); i < 10; i++ {
			if _, err := c.Job(context.Background(), scatter.BatchJobID(sc.ID, i)); !errors.Is(err, spool.ErrNotFound) {
				t.Fatalf("waiting batch %d got a job after the cancel: %v", i, err)
			}
		}
	})
}

// waitRunning waits until n of a scatter's batches run.
func waitRunning(t *testing.T, c *client.Client, id string, n int) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		sc, err := c.Scatter(context.Background(), id)
		if err != nil {
			t.Fatal(err)
		}
		if sc.Progress.Running >= n {
			return
		}
	}
	t.Fatalf("scatter %s never had %d batches running", id, n)
}

// TestScatterSurvivesRestart: a server stopped mid-scatter and started
// again goes on where it was; every batch runs exactly once.
func TestScatterSurvivesRestart(t *testing.T) {
	onStores(t, func(st testStore) bool { return st.persistent }, func(t *testing.T, set func(*server.Config)) {
		srv := newServer(t, set)
		spooltest.NewWorker(t, srv, worker.Config{Concurrency: 3})
		c := srv.Client()
		sc, err := c.StartScatter(context.Background(), client.ScatterParams{
			Job: client.SubmitParams{Script: "sleep 0.5; " + countItems}, Batches: batches(9, 2), MaxConcurrency: 3,
			Gather: `cat > "$SPOOL_RESULT"`,
		})
		if err != nil {
			t.Fatal(err)
		}
		waitRunning(t, c, sc.ID, 2)
		srv.Restart()
		sc = follow(t, c, sc.ID)
		wantProgress(t, sc, spool.ScatterSucceeded, 9, 0, 0)
		jobs := 0
		for j, err := range c.Jobs(context.Background(), client.ListParams{}) {
			if err != nil {
				t.Fatal(err)
			}
			if strings.HasPrefix(j.ID, sc.ID) {
				jobs++
			}
		}
		if jobs != 10 {
			t.Fatalf("%d jobs for 9 batches and a gather", jobs)
		}
	})
}

// TestScatterRedrive: a scatter that failed is redriven: only its failed
// and never-run batches run again, as new jobs; the batch that succeeded
// keeps its job; the gather, in a job of its own, gets every batch's
// result. Its failure named the failed job; a redrive of it once it
// succeeded is refused.
func TestScatterRedrive(t *testing.T) {
	onEveryStore(t, func(t *testing.T, srv *spooltest.Server) {
		spooltest.NewWorker(t, srv, worker.Config{Concurrency: 2})
		c := srv.Client()
		ctx := context.Background()
		mark := filepath.Join(t.TempDir(), "fixed")
		sc, err := c.StartScatter(ctx, client.ScatterParams{
			Job: client.SubmitParams{Env: map[string]string{"MARK": mark},
				Script: `{ test $((SPOOL_BATCH_INDEX % 2)) -eq 0 || test -e "$MARK"; } && echo "{\"i\": $SPOOL_BATCH_INDEX}" > "$SPOOL_RESULT"`},
			Batches: batches(4, 1), MaxConcurrency: 1, Gather: `cat > "$SPOOL_RESULT"`,
		})
		if err != nil {
			t.Fatal(err)
		}
		sc = follow(t, c, sc.ID)
		wantProgress(t, sc, spool.ScatterFailed, 1, 1, 2)
		failed := scatter.BatchJobID(sc.ID, 1)
		if !slices.Equal(sc.FailedJobIDs, []string{failed}) || !strings.Contains(sc.Error, "failed jobs: "+failed) {
			t.Fatalf("the failed scatter names %v, error %q; want %s", sc.FailedJobIDs, sc.Error, failed)
		}

		if err := os.WriteFile(mark, nil, 0o600); err != nil {
			t.Fatal(err)
		}
		sc, err = c.RedriveScatter(ctx, sc.ID)
		if err != nil {
			t.Fatal(err)
		}
		if sc.State != spool.ScatterRunning || sc.RedriveCount != 1 || len(sc.FailedJobIDs) != 0 {
			t.Fatalf("redriven: %s, redrive %d, failed jobs %v", sc.State, sc.RedriveCount, sc.FailedJobIDs)
		}
		sc = follow(t, c, sc.ID)
		wantProgress(t, sc, spool.ScatterSucceeded, 4, 0, 0)
		if sc.GatherJobID != scatter.GatherJobID(sc.ID)+".r1" {
			t.Fatalf("gather job %q, want the redrive's own", sc.GatherJobID)
		}
		bs, _, err := c.ScatterBatches(ctx, sc.ID, 0, 0)
		if err != nil {
			t.Fatal(err)
		}
		for i, b := range bs {
			want := fmt.Sprintf("%s.%d.r1", sc.ID, i)
			if i == 0 {
				want = scatter.BatchJobID(sc.ID, 0)
			}
			if b.Job == nil || b.Job.ID != want || b.Job.State != spool.Succeeded {
				t.Fatalf("batch %d: job %+v, want %s succeeded", i, b.Job, want)
			}
		}
		if old, err := c.Job(ctx, failed); err != nil || old.State != spool.Failed {
			t.Fatalf("the first job of the failed batch: %v %v; want it kept, failed", old, err)
		}
		gather, err := c.Job(ctx, sc.GatherJobID)
		if err != nil {
			t.Fatal(err)
		}
		var doc gatherDoc
		if err := json.Unmarshal([]byte(gather.Result.Output), &doc); err != nil {
			t.Fatal(err)
		}
		for i := range 4 {
			if got, want := string(doc.BatchResults[fmt.Sprint(i)]), fmt.Sprintf(`{"i":%d}`, i); strings.ReplaceAll(got, " ", "") != want {
				t.Fatalf("the gather read batch %d's result as %s, want %s", i, got, want)
			}
		}
		if len(doc.FailedBatches) != 0 {
			t.Fatalf("the gather read failed batches %v", doc.FailedBatches)
		}
		if _, err := c.RedriveScatter(ctx, sc.ID); !errors.Is(err, spool.ErrConflict) || !strings.Contains(err.Error(), "succeeded: there is nothing to run again") {
			t.Fatalf("a redrive of a succeeded scatter: %v", err)
		}
	})
}
