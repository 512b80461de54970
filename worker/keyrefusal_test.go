package worker_test

import (
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/spool-run/spool"
	"github.com/spool-run/spool/client"
	"github.com/spool-run/spool/internal/outbox"
	"github.com/spool-run/spool/internal/safebuf"
	"github.com/spool-run/spool/server"
	"github.com/spool-run/spool/spooltest"
	"github.com/spool-run/spool/worker"
)

// TestRevokedKeyStopsTheWorker: a worker whose key is revoked while it
// runs a long command stops the command within moments of the next call
// (its heartbeat), says its key was refused, keeps the output not yet sent
// on disk, and Run returns an error that is spool.ErrUnauthenticated (or
// ErrPermissionDenied) and says what to do.
func TestRevokedKeyStopsTheWorker(t *testing.T) {
	t.Parallel()
	srv := spooltest.NewServer(t, spooltest.Config{Server: func(c *server.Config) {
		c.Execution.HeartbeatInterval = time.Second
		c.Jobs.Lease = 3 * time.Second
	}})
	admin := srv.Client()
	_, secret, err := admin.CreateKey(t.Context(), client.KeyParams{Name: "doomed", Role: spool.RoleWorker})
	if err != nil {
		t.Fatal(err)
	}
	spoolDir := t.TempDir()
	var logs safebuf.Buffer
	w, err := worker.New(worker.Config{Server: srv.URL, APIKey: secret, SpoolDir: spoolDir, KillGrace: time.Second,
		Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- w.Run(t.Context()) }()

	pidFile := filepath.Join(t.TempDir(), "pid")
	j, _, err := admin.Submit(t.Context(), sh(`echo $$ > `+pidFile+`; echo started; exec sleep 120`))
	if err != nil {
		t.Fatal(err)
	}
	e := &env{srv: srv, c: admin}
	waitForLines(t, e, j.ID, 1)
	pid, err := strconv.Atoi(strings.TrimSpace(readFile(t, pidFile)))
	if err != nil {
		t.Fatal(err)
	}

	revoked := time.Now()
	if _, err := admin.RevokeKey(t.Context(), "doomed"); err != nil {
		t.Fatal(err)
	}
	select {
	case err = <-done:
	case <-time.After(30 * time.Second):
		t.Fatalf("the worker still runs 30s after its key was revoked:\n%s", logs.String())
	}
	if took := time.Since(revoked); took > 10*time.Second {
		t.Errorf("the worker took %v to stop after its key was revoked (heartbeats are every second)", took)
	}
	if !errors.Is(err, spool.ErrUnauthenticated) && !errors.Is(err, spool.ErrPermissionDenied) {
		t.Fatalf("Run: %v; want ErrUnauthenticated or ErrPermissionDenied", err)
	}
	if !strings.Contains(err.Error(), "the server refuses this worker's key") || !strings.Contains(err.Error(), "spool keys create --role worker") {
		t.Errorf("Run's error does not say the key was refused and what to do: %v", err)
	}
	if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
		t.Errorf("the command (pid %d) is still there after the worker stopped: %v", pid, err)
	}
	if !strings.Contains(logs.String(), "the server refuses this worker's key: stopping its jobs") {
		t.Errorf("the worker did not say why it stopped:\n%s", logs.String())
	}
	if left, err := outbox.List(spoolDir); err != nil || len(left) != 1 {
		t.Errorf("the job's output is not kept in the spool directory: %v, %v", left, err)
	}
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
