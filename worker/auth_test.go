package worker_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/spool-run/spool"
	"github.com/spool-run/spool/client"
	"github.com/spool-run/spool/spooltest"
	"github.com/spool-run/spool/worker"
)

// TestWorkerKeys: a worker runs jobs with a worker key (limited to its
// queue or not), and stops at once, saying why, when its key is missing,
// of the wrong role, or limited to other queues.
func TestWorkerKeys(t *testing.T) {
	t.Parallel()
	srv := spooltest.NewServer(t)
	builds := srv.Key(t, spool.RoleWorker, "builds")
	j, _, err := srv.Client().Submit(context.Background(), client.SubmitParams{Queue: "builds", Argv: []string{"echo", "built"}})
	if err != nil {
		t.Fatal(err)
	}
	spooltest.NewWorker(t, srv, worker.Config{APIKey: builds, Queue: "builds"})
	if done := srv.WaitJob(t, j.ID); done.State != spool.Succeeded {
		t.Fatalf("the job of a queue-limited worker ended %s", done.State)
	}

	for name, tc := range map[string]struct {
		key, queue string
		kind       error
		says       string
		// advice is what the worker is told to do; not, what it must
		// not be told.
		advice, not string
	}{
		"no key":      {"", "", spool.ErrUnauthenticated, "an API key is needed", "spool keys create --role worker", ""},
		"unknown key": {"spool_nobody", "", spool.ErrUnauthenticated, "not known to the server", "spool keys create --role worker", ""},
		"read key":    {srv.Key(t, spool.RoleRead), "", spool.ErrPermissionDenied, "may not run jobs", "spool keys create --role worker", ""},
		// The key is a worker key already: it is told to name its queue,
		// not to get another key.
		"another queue": {builds, "deploys", spool.ErrPermissionDenied, `may only use queues builds, not "deploys"`, "start the worker with -q builds", "keys create"},
	} {
		t.Run(name, func(t *testing.T) {
			w, err := worker.New(worker.Config{Server: srv.URL, APIKey: tc.key, Queue: tc.queue, SpoolDir: t.TempDir()})
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			err = w.Run(ctx)
			if !errors.Is(err, tc.kind) || !strings.Contains(err.Error(), tc.says) || !strings.Contains(err.Error(), tc.advice) {
				t.Fatalf("Run: %v; want %v saying %q and %q", err, tc.kind, tc.says, tc.advice)
			}
			if tc.not != "" && strings.Contains(err.Error(), tc.not) {
				t.Fatalf("Run: %v; must not say %q", err, tc.not)
			}
		})
	}
}

// A worker given https:// for a server that speaks plain HTTP stops at its
// first poll and says which address to use: asking again would fail again.
func TestWorkerToldTheServersScheme(t *testing.T) {
	t.Parallel()
	srv := spooltest.NewServer(t)
	wrong := strings.Replace(srv.URL, "http://", "https://", 1)
	w, err := worker.New(worker.Config{Server: wrong, APIKey: srv.AdminKey, SpoolDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	err = w.Run(ctx)
	if !errors.Is(err, spool.ErrInvalidArgument) || !strings.Contains(err.Error(), "speaks plain HTTP, not HTTPS: start the worker with --server "+srv.URL) {
		t.Fatalf("Run: %v; want the worker to stop, naming %s", err, srv.URL)
	}
}
