package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/spool-run/spool"
	"github.com/spool-run/spool/client"
)

// TestServerKilledMidScatter: `spool server` is killed (-9) while a
// scatter's batches run and started again on the same store; the scatter
// goes on where it was, every batch has exactly one job, and all of them
// succeed.
func TestServerKilledMidScatter(t *testing.T) {
	t.Parallel()
	onEveryStore(t, testServerKilledMidScatter)
}

func testServerKilledMidScatter(t *testing.T, store []string) {
	addr, data := freePort(t), t.TempDir()
	srv, c := startServer(t, addr, data, store...)
	w := startWorker(t, "worker", "http://"+addr, t.TempDir(), "--concurrency", "3")
	const n = 12
	batches := make([]json.RawMessage, n)
	for i := range batches {
		batches[i] = json.RawMessage(fmt.Sprintf(`[{"n":%d},{"n":%d}]`, 2*i, 2*i+1))
	}
	sc, err := c.StartScatter(context.Background(), client.ScatterParams{
		Job:            client.SubmitParams{Script: `sleep 0.4; echo "{\"batch\": $SPOOL_BATCH_INDEX}" > "$SPOOL_RESULT"`},
		Batches:        batches,
		MaxConcurrency: 3,
	})
	if err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(50 * time.Millisecond) {
		got, err := c.Scatter(context.Background(), sc.ID)
		if err == nil && got.Progress.Succeeded >= 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the scatter never got going: %v %v", got, err)
		}
	}
	srv.kill9(t)
	w.waitSaid(t, serverGone...) // batches run on with the server away
	startServer(t, addr, data, store...)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	sc, err = c.FollowScatter(ctx, sc.ID, 100*time.Millisecond, nil)
	if err != nil {
		t.Fatal(err)
	}
	if p := sc.Progress; sc.State != spool.ScatterSucceeded || p.Succeeded != n || p.ItemsDone != 2*n {
		t.Fatalf("after the restart the scatter ended %s (%s) with %v", sc.State, sc.Error, p)
	}
	jobs := 0
	for j, err := range c.Jobs(context.Background(), client.ListParams{}) {
		if err != nil {
			t.Fatal(err)
		}
		if strings.HasPrefix(j.ID, sc.ID) {
			jobs++
			if j.State != spool.Succeeded {
				t.Errorf("batch job %s ended %s", j.ID, j.State)
			}
		}
	}
	if jobs != n {
		t.Fatalf("%d jobs for %d batches", jobs, n)
	}
}
