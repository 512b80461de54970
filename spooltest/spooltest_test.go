package spooltest_test

import (
	"context"
	"strings"
	"testing"

	"github.com/spool-run/spool"
	"github.com/spool-run/spool/client"
	"github.com/spool-run/spool/spooltest"
)

// requireFails fails t unless check fails the test with a message that
// says every part of want.
func requireFails(t *testing.T, name string, check func(testing.TB), want ...string) {
	t.Helper()
	got := failure(check)
	if got == "" {
		t.Errorf("%s: passed, want it to fail", name)
		return
	}
	for _, w := range want {
		if !strings.Contains(got, w) {
			t.Errorf("%s: failed with %q, want it to say %q", name, got, w)
		}
	}
}

// requirePasses fails t if check fails the test.
func requirePasses(t *testing.T, name string, check func(testing.TB)) {
	t.Helper()
	if got := failure(check); got != "" {
		t.Errorf("%s: failed with %q, want it to pass", name, got)
	}
}

// submit enqueues a job that no worker takes on its own.
func submit(t *testing.T, c *client.Client, p client.SubmitParams) *spool.Job {
	t.Helper()
	job, _, err := c.Submit(context.Background(), p)
	if err != nil {
		t.Fatal(err)
	}
	return job
}

// RequireJob fails for a job in another state than the one asked for,
// final or live, and for a job that does not exist.
func TestRequireJob(t *testing.T) {
	srv := spooltest.NewServer(t)
	c := srv.Client()
	succeeded := spooltest.RunJob(t, srv, spooltest.Seq(1, 2)...)
	failedID := submit(t, c, client.SubmitParams{Script: "exit 3"}).ID
	l := spooltest.LeaseJob(t, srv, "")
	l.Begin()
	l.End(3)
	queuedID := submit(t, c, client.SubmitParams{Queue: "idle", Script: "true"}).ID

	requirePasses(t, "succeeded as succeeded", func(tb testing.TB) {
		if j := spooltest.RequireJob(tb, c, succeeded.ID, spool.Succeeded); j.ID != succeeded.ID || j.LineCount != 2 {
			t.Errorf("RequireJob returned %+v", j)
		}
	})
	requireFails(t, "succeeded as failed", func(tb testing.TB) { spooltest.RequireJob(tb, c, succeeded.ID, spool.Failed) },
		"job "+succeeded.ID+" is succeeded (exit code 0), want failed")
	requireFails(t, "failed as succeeded", func(tb testing.TB) { spooltest.RequireJob(tb, c, failedID, spool.Succeeded) },
		"is failed (exit code 3", "want succeeded")
	requirePasses(t, "queued as queued", func(tb testing.TB) { spooltest.RequireJob(tb, c, queuedID, spool.Queued) })
	requireFails(t, "queued as running", func(tb testing.TB) { spooltest.RequireJob(tb, c, queuedID, spool.Running) },
		"is queued, want running")
	requireFails(t, "a job that does not exist", func(tb testing.TB) { spooltest.RequireJob(tb, c, "no-such-job", spool.Succeeded) },
		"job no-such-job", "not found")
}

// RequireLines fails when a line differs, is missing or is one too many,
// and says which.
func TestRequireLines(t *testing.T) {
	srv := spooltest.NewServer(t)
	c := srv.Client()
	id := spooltest.RunJob(t, srv, spooltest.Line{Text: "one"}, spooltest.Line{Text: "two", Stderr: true}, spooltest.Line{Text: "three"}).ID

	requirePasses(t, "the lines", func(tb testing.TB) {
		lines := spooltest.RequireLines(tb, c, id, "one", "two", "three")
		if len(lines) != 3 || lines[1].Stream != spool.Stderr || lines[2].Number != 3 {
			t.Errorf("RequireLines returned %+v", lines)
		}
	})
	requireFails(t, "a line differs", func(tb testing.TB) { spooltest.RequireLines(tb, c, id, "one", "2", "three") },
		`wrote "two" as line 2, want "2"`)
	requireFails(t, "a line too many", func(tb testing.TB) { spooltest.RequireLines(tb, c, id, "one", "two") },
		`wrote 3 lines, want 2: line 3 is "three"`)
	requireFails(t, "a line missing", func(tb testing.TB) { spooltest.RequireLines(tb, c, id, "one", "two", "three", "four") },
		`wrote 3 lines, want 4: line 4, "four", is missing`)
	requireFails(t, "no output wanted", func(tb testing.TB) { spooltest.RequireLines(tb, c, id) }, "wrote 3 lines, want 0")
}

// RequireEnqueued finds the newest job that matches, and fails naming what
// it found when none does.
func TestRequireEnqueued(t *testing.T) {
	srv := spooltest.NewServer(t)
	c := srv.Client()
	requireFails(t, "no jobs at all", func(tb testing.TB) { spooltest.RequireEnqueued(tb, c, spooltest.Enqueued{}) },
		"no job with any job was enqueued, nor any other")

	submit(t, c, client.SubmitParams{Queue: "mail", Argv: []string{"send", "41"}})
	want := submit(t, c, client.SubmitParams{Queue: "mail", Argv: []string{"send", "42"}, Env: map[string]string{"TO": "a@b"}, RequestID: "r42"})
	submit(t, c, client.SubmitParams{Queue: "other", Argv: []string{"send", "42"}})

	for _, e := range []spooltest.Enqueued{
		{Queue: "mail", Argv: []string{"send", "42"}},
		{Env: map[string]string{"TO": "a@b"}},
		{RequestID: "r42"},
	} {
		requirePasses(t, e.String(), func(tb testing.TB) {
			if j := spooltest.RequireEnqueued(tb, c, e); j.ID != want.ID {
				t.Errorf("%s found %s, want %s", e, j.ID, want.ID)
			}
		})
	}
	requireFails(t, "another command", func(tb testing.TB) {
		spooltest.RequireEnqueued(tb, c, spooltest.Enqueued{Queue: "mail", Argv: []string{"send", "43"}})
	}, `no job with queue "mail", argv ["send" "43"] was enqueued; the newest of 2 others:`, want.ID, `argv ["send" "42"]`)
	requireFails(t, "another variable", func(tb testing.TB) {
		spooltest.RequireEnqueued(tb, c, spooltest.Enqueued{Env: map[string]string{"TO": "c@d"}})
	}, `no job with TO="c@d" was enqueued; the newest of 3 others:`)
	requireFails(t, "a script", func(tb testing.TB) {
		spooltest.RequireEnqueued(tb, c, spooltest.Enqueued{Script: "send"})
	}, `no job with script "send"`)
}
