package e2e

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/spool-run/spool"
	"github.com/spool-run/spool/client"
	"github.com/spool-run/spool/internal/store/backends/pgstore/pgtest"
)

// TestSubmitsRideOutAPostgresRestart: 300 `spool submit` commands, ten at
// a time, while PostgreSQL restarts as after a crash. Each retries the
// calls the restart fails, with the request id it made itself, so every
// one succeeds and makes exactly one job; `spool jobs get` calls in between
// retry too.
func TestSubmitsRideOutAPostgresRestart(t *testing.T) {
	t.Parallel()
	cluster := pgtest.NewCluster(t)
	addr := freePort(t)
	_, c := startServer(t, addr, t.TempDir(), configArgs(t, postgresConfig(cluster.URL()))...)
	url := "http://" + addr

	const submits, atOnce = 300, 10
	var (
		mu       sync.Mutex
		ids      = map[string]int{}
		failures []string
		done     atomic.Int32
		wg       sync.WaitGroup
		slots    = make(chan struct{}, atOnce)
	)
	fail := func(format string, args ...any) {
		mu.Lock()
		defer mu.Unlock()
		failures = append(failures, fmt.Sprintf(format, args...))
	}
	for i := range submits {
		wg.Go(func() {
			slots <- struct{}{}
			defer func() { <-slots }()
			defer done.Add(1)
			out, err := spoolCommand(t, "submit", "--server", url, "--", "echo", fmt.Sprint(i))
			if err != nil {
				fail("submit %d: %v", i, err)
				return
			}
			id := strings.TrimSpace(out)
			mu.Lock()
			ids[id]++
			mu.Unlock()
			if i%5 == 0 {
				if _, err := spoolCommand(t, "jobs", "get", "--server", url, id); err != nil {
					fail("jobs get %s: %v", id, err)
				}
			}
		})
	}
	// The restart comes once a third of the submits are done, while the
	// others are on their way.
	for deadline := time.Now().Add(2 * time.Minute); done.Load() < submits/3; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("only %d submits done after two minutes", done.Load())
		}
	}
	cluster.Restart(t)
	wg.Wait()

	if len(failures) > 0 {
		t.Errorf("%d of the calls failed across the restart:\n%s", len(failures), strings.Join(failures, "\n"))
	}
	var stored []*spool.Job
	for j, err := range c.Jobs(context.Background(), client.ListParams{PageSize: 100}) {
		if err != nil {
			t.Fatal(err)
		}
		stored = append(stored, j)
	}
	twice := 0
	for _, j := range stored {
		if ids[j.ID] != 1 {
			twice++
		}
	}
	if len(stored) != submits-len(failures) || twice > 0 || len(ids) != len(stored) {
		t.Fatalf("%d submits succeeded and printed %d job ids; the store holds %d jobs, %d of them not printed exactly once",
			submits-len(failures), len(ids), len(stored), twice)
	}
}

// spoolCommand runs spool with args and the tests' admin key, and returns
// its standard output; an error carries its standard error.
func spoolCommand(t *testing.T, args ...string) (string, error) {
	t.Helper()
	cmd := exec.Command(spoolBin, args...)
	cmd.Env = append(spoolEnv(), "SPOOL_API_KEY="+adminKey)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return stdout.String(), fmt.Errorf("%w: %s", err, strings.TrimSpace(stderr.String()))
	}
	return stdout.String(), nil
}
