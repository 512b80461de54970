package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/spool-run/spool"
	"github.com/spool-run/spool/client"
	"github.com/spool-run/spool/internal/store/backends/pgstore/pgtest"
)

// outageLease is the lease length of the outage tests' servers and
// workers (runIn's SPOOL_JOBS_LEASE_SECONDS and startWorker's
// --lease), renewed every second.
const outageLease = 3 * time.Second

// TestPostgresAwayDoesNotRerunJobs: PostgreSQL stops for three lease
// lengths while 12 jobs run; their workers keep them running and
// heartbeating into errors. When it is back, no job runs a second time:
// every job succeeds on its first attempt, started once, with every line
// of its output stored once.
func TestPostgresAwayDoesNotRerunJobs(t *testing.T) {
	t.Parallel()
	cluster := pgtest.NewCluster(t)
	addr := freePort(t)
	_, c := startServer(t, addr, t.TempDir(), configArgs(t, postgresConfig(cluster.URL()))...)
	startWorker(t, "worker", "http://"+addr, t.TempDir(), "--concurrency", "12")

	// Each job notes its start in starts, then prints 1..100 over about
	// 20 s: long enough to run through the whole outage.
	const jobs, lines = 12, 100
	starts := filepath.Join(t.TempDir(), "starts")
	script := fmt.Sprintf(`echo "$SPOOL_JOB_ID $SPOOL_JOB_ATTEMPT" >> %s; i=1; while [ $i -le %d ]; do echo $i; sleep 0.2; i=$((i+1)); done`, starts, lines)
	var ids []string
	for range jobs {
		j, _, err := c.Submit(context.Background(), client.SubmitParams{Script: script})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, j.ID)
	}
	for _, id := range ids {
		waitLines(t, c, id, 5)
	}

	cluster.Stop(t)
	// The outage itself, not a wait for something: every lease runs out
	// three times over while the database is away.
	time.Sleep(3 * outageLease)
	cluster.Start(t)

	for _, id := range ids {
		j := waitFinal(t, c, id)
		if j.State != spool.Succeeded || j.Attempt != 1 {
			t.Errorf("job %s ended %v on attempt %d, want succeeded on attempt 1 (notes: %v)", id, j.State, j.Attempt, j.Notes)
		}
	}
	raw, err := os.ReadFile(starts)
	if err != nil {
		t.Fatal(err)
	}
	started := strings.Fields(string(raw))
	var reruns []string
	count := map[string]int{}
	for i := 0; i+1 < len(started); i += 2 {
		if count[started[i]]++; count[started[i]] > 1 {
			reruns = append(reruns, started[i]+" (attempt "+started[i+1]+")")
		}
	}
	if len(reruns) > 0 || len(count) != jobs {
		t.Errorf("%d of %d jobs started; these ran again after the outage: %v", len(count), jobs, reruns)
	}
	for _, id := range ids {
		log, err := c.ReadLog(context.Background(), id)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, ev := range log {
			for _, d := range ev.Lines {
				got = append(got, d.Text)
			}
		}
		want := make([]string, lines)
		for i := range want {
			want[i] = strconv.Itoa(i + 1)
		}
		if !slices.Equal(got, want) {
			t.Errorf("job %s's log holds %d lines, want 1..%d once each: %v", id, len(got), lines, got)
		}
	}
}
