package e2e

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/spool-run/spool"
	"github.com/spool-run/spool/client"
)

// TestWorkerWithRevokedKeyExits: `spool worker` whose key is revoked while
// it runs a job stops the job, exits non-zero and says its key was refused,
// where the key came from and how to get one, not that the server cannot
// be reached.
func TestWorkerWithRevokedKeyExits(t *testing.T) {
	t.Parallel()
	addr := freePort(t)
	_, c := startServer(t, addr, t.TempDir())
	_, secret, err := c.CreateKey(context.Background(), client.KeyParams{Name: "builder", Role: spool.RoleWorker})
	if err != nil {
		t.Fatal(err)
	}
	w := runIn(t, "worker", "", []string{"SPOOL_API_KEY=" + secret},
		"worker", "--server", "http://"+addr, "--spool-dir", t.TempDir(), "--kill-grace", "1s")
	job, _, err := c.Submit(context.Background(), client.SubmitParams{Script: "echo started; sleep 120"})
	if err != nil {
		t.Fatal(err)
	}
	waitLines(t, c, job.ID, 1)
	if _, err := c.RevokeKey(context.Background(), "builder"); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- w.cmd.Wait() }()
	select {
	case err = <-exited:
	case <-time.After(30 * time.Second):
		t.Fatalf("spool worker still runs 30s after its key was revoked:\n%s", w.out.String())
	}
	out := w.out.String()
	if err == nil || !strings.Contains(out, "spool: worker: the server refuses this worker's key") ||
		!strings.Contains(out, "the key sent came from SPOOL_API_KEY") || !strings.Contains(out, "spool keys create --role worker") ||
		strings.Contains(out, "cannot reach") {
		t.Fatalf("spool worker with a revoked key: %v\n%s", err, out)
	}
}
