package cli

import (
	"context"
	"encoding/json"
	"regexp"
	"strings"
	"testing"

	"github.com/spool-run/spool"
	"github.com/spool-run/spool/client"
	"github.com/spool-run/spool/internal/jobjson"
	"github.com/spool-run/spool/spooltest"
)

// TestQueuesListPauseResume: spool queues shows each queue's counts, and
// pause and resume change what it shows.
func TestQueuesListPauseResume(t *testing.T) {
	t.Parallel()
	srv := spooltest.NewServer(t)
	c := srv.Client()
	for range 2 {
		if _, _, err := c.Submit(context.Background(), client.SubmitParams{Queue: "builds", Argv: []string{"make"}}); err != nil {
			t.Fatal(err)
		}
	}
	spooltest.RunJob(t, srv) // one succeeded in the default queue

	r := run(srv, "queues")
	lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
	if r.code != 0 || len(lines) != 3 || !strings.HasPrefix(lines[0], "QUEUE ") {
		t.Fatalf("spool queues: %+v", r)
	}
	if !strings.Contains(lines[0], "  SUCCEEDED 24H  FAILED 24H  ") {
		t.Errorf("the header does not say the counts are of the last 24 hours as the web UI does: %q", lines[0])
	}
	if f := strings.Fields(lines[1]); f[0] != "builds" || f[1] != "active" || f[2] != "0" || f[3] != "2" || f[4] != "0" || f[5] != "-" || f[6] != "0" {
		t.Errorf("builds row %q: want active, 0 scheduled, 2 queued, 0 running, no limit, 0 succeeded", lines[1])
	}
	if f := strings.Fields(lines[2]); f[0] != "default" || f[3] != "0" || f[6] != "1" || f[len(f)-1] != "1" {
		t.Errorf("default row %q: want 0 queued, 1 succeeded, 1 worker", lines[2])
	}

	r = run(srv, "queues", "pause", "builds")
	if r.code != 0 || r.stdout != "queue builds paused: workers take none of its jobs until spool queues resume\n" {
		t.Fatalf("pause: %+v", r)
	}
	r = run(srv, "queues", "--json")
	var list jobjson.QueueList
	if err := json.Unmarshal([]byte(r.stdout), &list); err != nil || r.code != 0 {
		t.Fatalf("queues --json: %v %+v", err, r)
	}
	if len(list.Queues) != 2 || !list.Queues[0].Paused || list.Queues[0].PausedAt.IsZero() || list.WindowSeconds != 86400 {
		t.Fatalf("queues --json after the pause: %+v", list)
	}
	if r := run(srv, "queues"); !strings.Contains(r.stdout, "builds   paused") {
		t.Errorf("the table does not say builds is paused:\n%s", r.stdout)
	}
	r = run(srv, "queues", "resume", "builds")
	if r.code != 0 || !strings.Contains(r.stdout, "resumed") {
		t.Fatalf("resume: %+v", r)
	}
	if r := run(srv, "queues"); !strings.Contains(r.stdout, "builds   active") {
		t.Errorf("the table does not say builds is active again:\n%s", r.stdout)
	}

	// A key that may read but not operate is told so.
	reader := srv.Key(t, spool.RoleRead)
	r = run(srv, "--api-key", reader, "queues", "pause", "builds")
	if r.code == 0 || !strings.Contains(r.stderr, "may not pause queues or delete jobs") {
		t.Errorf("pause with a read key: %+v", r)
	}
	if r := run(srv, "queues", "pause", "no/such"); r.code == 0 || !strings.Contains(r.stderr, "queue") {
		t.Errorf("pause of a malformed queue name: %+v", r)
	}
	// A queue that is none is refused, with the queues there are; nothing
	// is paused.
	for _, verb := range []string{"pause", "resume"} {
		wantRefusal(t, verb+" NOSUCHQUEUE", run(srv, "queues", verb, "NOSUCHQUEUE"),
			`no queue is named "NOSUCHQUEUE": the queues are builds, default; a queue appears with its first job (spool submit -q NOSUCHQUEUE) or when a worker polls it (spool worker -q NOSUCHQUEUE)`)
	}
	if r := run(srv, "queues"); r.code != 0 || strings.Contains(r.stdout, "NOSUCHQUEUE") {
		t.Errorf("a refused pause made a queue:\n%s", r.stdout)
	}
}

// TestJobsRerunAndDelete: rerun makes a new job linked both ways; delete
// removes finished jobs and refuses running ones.
func TestJobsRerunAndDelete(t *testing.T) {
	t.Parallel()
	srv := spooltest.NewServer(t)
	c := srv.Client()
	old := spooltest.RunJob(t, srv, spooltest.Seq(1, 5)...)

	r := run(srv, "jobs", "rerun", old.ID)
	newID := strings.TrimSpace(r.stdout)
	if r.code != 0 || newID == "" || !strings.Contains(r.stderr, "rerun of "+old.ID) {
		t.Fatalf("rerun: %+v", r)
	}
	j, err := c.Job(context.Background(), newID)
	if err != nil || j.RerunOf != old.ID || j.State != spool.Queued {
		t.Fatalf("the rerun: %v %v", j, err)
	}
	r = run(srv, "jobs", "get", old.ID)
	if !regexp.MustCompile(`(?m)^Rerun as:\s+` + newID + `$`).MatchString(r.stdout) {
		t.Errorf("jobs get of the old job does not name its rerun:\n%s", r.stdout)
	}
	if r := run(srv, "jobs", "get", newID); !strings.Contains(r.stdout, "Rerun of:") {
		t.Errorf("jobs get of the rerun does not name the old job:\n%s", r.stdout)
	}
	// The rerun is queued: it can be neither rerun nor deleted yet.
	if r := run(srv, "jobs", "rerun", newID); r.code == 0 || !strings.Contains(r.stderr, "wait for it to finish") {
		t.Errorf("rerun of a queued job: %+v", r)
	}
	if r := run(srv, "jobs", "delete", newID); r.code == 0 || !strings.Contains(r.stderr, "cancel it first") {
		t.Errorf("delete of a queued job: %+v", r)
	}

	r = run(srv, "jobs", "delete", old.ID)
	if r.code != 0 || r.stdout != old.ID+": deleted\n" {
		t.Fatalf("delete: %+v", r)
	}
	if r := run(srv, "jobs", "get", old.ID); r.code == 0 {
		t.Errorf("jobs get of a deleted job: %+v", r)
	}
	if r := run(srv, "logs", old.ID); r.code == 0 {
		t.Errorf("logs of a deleted job: %+v", r)
	}
}

// TestJobsListStartedAndElapsed: a running job shows when it started and
// how long it has run, in the list and in jobs get.
func TestJobsListStartedAndElapsed(t *testing.T) {
	t.Parallel()
	srv := spooltest.NewServer(t)
	l := leaseNew(t, srv)
	r := run(srv, "jobs", "list")
	lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
	if r.code != 0 || len(lines) != 2 || !strings.Contains(lines[0], "STARTED") || !strings.Contains(lines[0], "ELAPSED") {
		t.Fatalf("jobs list: %+v", r)
	}
	if f := strings.Fields(lines[1]); f[2] != "running" || f[7] != "ago" || !strings.HasSuffix(f[8], "s") {
		t.Errorf("running row %q: want a start time and an elapsed time", lines[1])
	}
	if r := run(srv, "jobs", "get", l.JobID()); !strings.Contains(r.stdout, "Started:") || !strings.Contains(r.stdout, "Running for:") {
		t.Errorf("jobs get of a running job:\n%s", r.stdout)
	}
}
