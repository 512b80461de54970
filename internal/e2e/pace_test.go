package e2e

import (
	"context"
	"io"
	"net/http"
	"regexp"
	"strconv"
	"testing"

	"github.com/spool-run/spool"
	"github.com/spool-run/spool/client"
)

// TestUnwatchedJobPublishedPerInterval: a job nobody follows that fills a
// batch every 50 ms (40 full batches over about 2.5 s) reaches the server
// in a few calls, about one per 1 s flush interval, not in a call per
// batch; and its log is whole.
func TestUnwatchedJobPublishedPerInterval(t *testing.T) {
	t.Parallel()
	addr := freePort(t)
	_, c := startServerEnv(t, addr, t.TempDir(), []string{"SPOOL_EXECUTION_BATCHING_FLUSH_INTERVAL_SECONDS=1"})
	startWorker(t, "worker", "http://"+addr, t.TempDir())
	job, _, err := c.Submit(context.Background(), client.SubmitParams{
		Script: `i=0; while [ $i -lt 40 ]; do seq 1 50; sleep 0.05; i=$((i+1)); done`})
	if err != nil {
		t.Fatal(err)
	}
	done := waitFinal(t, c, job.ID)
	if done.State != spool.Succeeded || done.LineCount != 2000 {
		t.Fatalf("the job ended %s with %d lines, want succeeded with 2000", done.State, done.LineCount)
	}
	appends, finishes := storeCalls(t, "http://"+addr, "append"), storeCalls(t, "http://"+addr, "finish")
	t.Logf("40 full batches reached the store in %d appends and %d completions with events", appends, finishes)
	// Without the pace each batch went in a call of its own (about 40).
	if appends+finishes > 10 {
		t.Fatalf("%d appends and %d completions with events for 40 batches in about 2.5 s: the worker did not hold full batches for its 1 s flush interval", appends, finishes)
	}
}

// storeCalls is how many calls of the store operation op the server at url
// has made, from its /metrics.
func storeCalls(t *testing.T, url, op string) int {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url+"/metrics", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+adminKey)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("/metrics: %d %v", resp.StatusCode, err)
	}
	m := regexp.MustCompile(`(?m)^spool_store_duration_seconds_count\{[^}]*operation="` + op + `"[^}]*\} (\d+)`).FindSubmatch(b)
	if m == nil {
		return 0
	}
	n, err := strconv.Atoi(string(m[1]))
	if err != nil {
		t.Fatal(err)
	}
	return n
}
