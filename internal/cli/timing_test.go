package cli

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/spool-run/spool"
	"github.com/spool-run/spool/internal/jobjson"
	"github.com/spool-run/spool/server"
	"github.com/spool-run/spool/spooltest"
	"github.com/spool-run/spool/worker"
)

// TestSubmitLaterAndAfter: --in and --at schedule a job, which jobs get and
// jobs list --state scheduled show with its time; --after makes a job wait
// for another, and each names the other; --priority is kept.
func TestSubmitLaterAndAfter(t *testing.T) {
	t.Parallel()
	srv := spooltest.NewServer(t)
	r := run(srv, "submit", "--in", "1h", "--priority", "1", "--notify", "https://example.com/a", "--notify", "https://example.com/b", "--", "make", "nightly")
	delayed := strings.TrimSpace(r.stdout)
	if r.code != 0 || delayed == "" {
		t.Fatalf("submit --in: %+v", r)
	}
	r = run(srv, "jobs", "get", delayed)
	for _, want := range []string{`(?m)^State:\s+scheduled$`, `(?m)^Waits:\s+until .+ \(in (59m[0-5]\d|1h0m0)s\)$`, `(?m)^Priority:\s+1$`,
		`(?m)^Notify:\s+https://example.com/a, https://example.com/b$`} {
		if !regexp.MustCompile(want).MatchString(r.stdout) {
			t.Errorf("jobs get of the delayed job does not match %s:\n%s", want, r.stdout)
		}
	}

	at := time.Now().Add(2 * time.Hour).UTC().Truncate(time.Second)
	r = run(srv, "submit", "--at", at.Format(time.RFC3339), "--after", delayed, "--", "./deploy.sh")
	next := strings.TrimSpace(r.stdout)
	if r.code != 0 {
		t.Fatalf("submit --at --after: %+v", r)
	}
	r = run(srv, "jobs", "get", next)
	if !regexp.MustCompile(`(?m)^Waits:\s+until .+ \(in (1h59m5\d|2h0m0)s\), then for job `+delayed+` to succeed$`).MatchString(r.stdout) ||
		!regexp.MustCompile(`(?m)^Runs after:\s+`+delayed+`$`).MatchString(r.stdout) {
		t.Errorf("jobs get of the job after it:\n%s", r.stdout)
	}
	if r := run(srv, "jobs", "get", delayed); !regexp.MustCompile(`(?m)^Followed by:\s+` + next + `$`).MatchString(r.stdout) {
		t.Errorf("jobs get of the first job does not name its follower:\n%s", r.stdout)
	}
	r = run(srv, "jobs", "list", "--state", "scheduled", "--json")
	var list jobjson.List
	if err := json.Unmarshal([]byte(r.stdout), &list); err != nil || len(list.Jobs) != 2 || list.Jobs[0].State != "scheduled" ||
		list.Jobs[0].RunAfter.IsZero() || list.Jobs[1].Priority != 1 || len(list.Jobs[0].After) != 1 {
		t.Fatalf("jobs list --state scheduled: %v %+v", err, r)
	}

	// A time past is now: the job is queued at once, and the person told.
	r = run(srv, "submit", "--at", "2020-01-01T00:00:00Z", "--", "true")
	if r.code != 0 || r.stderr != "spool: --at 2020-01-01T00:00:00Z is past: the job is queued now\n" {
		t.Fatalf("submit --at in the past: %+v", r)
	}
	j, err := srv.Client().Job(context.Background(), strings.TrimSpace(r.stdout))
	if err != nil || j.State != spool.Queued {
		t.Fatalf("the job submitted for the past: %+v, %v", j, err)
	}
}

// TestSubmitTimingRefusals: what cannot be asked is refused with what to
// type instead, before anything is sent.
func TestSubmitTimingRefusals(t *testing.T) {
	t.Parallel()
	srv := spooltest.NewServer(t)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--at", "2030-01-01T00:00:00Z", "--in", "1h"}, "give --at or --in, not both: --at is a time, --in a delay from now"},
		{[]string{"--at", "tomorrow 9am"}, `--at "tomorrow 9am": want a time in RFC 3339, such as 2026-11-28T09:30:00Z or 2026-11-28T09:30:00+01:00 (or 2026-11-28T09:30 in local time)`},
		{[]string{"--in", "-5m"}, "--in -5m0s is negative: give how long from now (10m, 2h)"},
		{[]string{"--priority", "5"}, "--priority 5: give 1 (first) to 4 (last); 2 is the default"},
	} {
		wantRefusal(t, strings.Join(tc.args, " "), run(srv, append(append([]string{"submit"}, tc.args...), "--", "true")...), tc.want)
	}
	if r := run(srv, "submit", "--after", "0195f3c2-0000-7000-8000-000000000000", "--", "true"); r.code != 1 || !strings.Contains(r.stderr, "0195f3c2-0000-7000-8000-000000000000") {
		t.Errorf("--after a job that is none: %+v", r)
	}
	if r := run(srv, "submit", "--notify", "ftp://example.com/x", "--", "true"); r.code != 1 || !strings.Contains(r.stderr, "ftp://example.com/x") {
		t.Errorf("--notify of a URL that is not http: %+v", r)
	}
	if r := run(srv, "jobs", "list"); r.stdout != "no jobs\n" {
		t.Errorf("a refused submit made a job:\n%s", r.stdout)
	}
}

// TestSubmitFollowScheduled: submit -f of a job that waits says what for,
// and ends as the job does: cancelled when the job it runs after is.
func TestSubmitFollowScheduled(t *testing.T) {
	t.Parallel()
	srv := spooltest.NewServer(t)
	first := strings.TrimSpace(run(srv, "submit", "--in", "1h", "--", "make").stdout)
	done := start(srv, "submit", "-f", "--after", first, "--", "./deploy.sh")
	c := srv.Client()
	ctx := context.Background()
	// Wait for the follower to exist before cancelling what it waits for.
	var follower string
	for follower == "" {
		j, err := c.Job(ctx, first)
		if err != nil {
			t.Fatal(err)
		}
		if len(j.Followers) > 0 {
			follower = j.Followers[0]
			break
		}
		select {
		case r := <-done:
			t.Fatalf("submit -f ended early: %+v", r)
		case <-time.After(10 * time.Millisecond):
		}
	}
	if _, err := c.Cancel(ctx, first, "not today"); err != nil {
		t.Fatal(err)
	}
	r := await(t, done)
	if r.code != 1 || !strings.Contains(r.stderr, "spool: job "+follower+" is scheduled: it waits for job "+first+" to succeed\n") ||
		!strings.Contains(r.stderr, "spool: job "+follower+" ") {
		t.Fatalf("submit -f of a job after another: %+v", r)
	}
	j, err := c.Job(ctx, follower)
	if err != nil || j.State != spool.Cancelled {
		t.Fatalf("the follower of a cancelled job: %+v, %v", j, err)
	}
}

// TestSubmitFollowDelayed: submit -f of a delayed job says until when it
// waits, then prints its output once a worker ran it at its time, and
// exits as it did.
func TestSubmitFollowDelayed(t *testing.T) {
	t.Parallel()
	srv := spooltest.NewServer(t)
	spooltest.NewWorker(t, srv, worker.Config{})
	begun := time.Now()
	r := await(t, start(srv, "submit", "-f", "--in", "1s", "--shell", "echo on time"))
	if r.code != 0 || r.stdout != "on time\n" || !regexp.MustCompile(`spool: job \S+ is scheduled: it waits until \d\d:\d\d:\d\d \(in 1s\)\n`).MatchString(r.stderr) {
		t.Fatalf("submit -f --in 1s: %+v", r)
	}
	if took := time.Since(begun); took < time.Second {
		t.Errorf("the job ran %v after it was submitted, before its time", took)
	}
}

// TestQueuesSetMaxRunning: spool queues set changes the limit, which spool
// queues shows with the scheduled count; 0 lifts it.
func TestQueuesSetMaxRunning(t *testing.T) {
	t.Parallel()
	srv := spooltest.NewServer(t)
	run(srv, "submit", "-q", "deploys", "--in", "1h", "--", "./deploy.sh")
	r := run(srv, "queues", "set", "deploys", "--max-running", "1")
	if r.code != 0 || r.stdout != "queue deploys: at most 1 of its jobs run at once (0 running now)\n" {
		t.Fatalf("queues set: %+v", r)
	}
	r = run(srv, "queues")
	lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
	if r.code != 0 || len(lines) != 2 || !strings.Contains(lines[0], " SCHEDULED ") || !strings.Contains(lines[0], " MAX RUNNING ") {
		t.Fatalf("queues: %+v", r)
	}
	if f := strings.Fields(lines[1]); f[0] != "deploys" || f[2] != "1" || f[3] != "0" || f[5] != "1" {
		t.Errorf("deploys row %q: want 1 scheduled, 0 queued, at most 1 running", lines[1])
	}
	if r := run(srv, "queues", "set", "deploys", "--max-running", "0"); r.code != 0 || r.stdout != "queue deploys: no limit on the jobs running at once\n" {
		t.Errorf("queues set 0: %+v", r)
	}
	wantRefusal(t, "set without a setting", run(srv, "queues", "set", "deploys"), "say what to set: spool queues set deploys --max-running N (0: no limit)")
	wantRefusal(t, "a negative limit", run(srv, "queues", "set", "deploys", "--max-running", "-2"),
		"--max-running -2 is negative: give the most jobs that may run at once, or 0 for no limit")
	reader := srv.Key(t, spool.RoleRead)
	if r := run(srv, "--api-key", reader, "queues", "set", "deploys", "--max-running", "3"); r.code == 0 {
		t.Errorf("a read key set a limit: %+v", r)
	}
}

// TestSchedulesCommands: a schedule is created, listed with its next run,
// shown, paused, resumed and deleted; mistakes are refused with what to
// type.
func TestSchedulesCommands(t *testing.T) {
	t.Parallel()
	srv := spooltest.NewServer(t)
	r := run(srv, "schedules", "create", "nightly", "--cron", "0 3 * * *", "--timezone", "Europe/Paris", "-q", "builds",
		"--overlap", "skip", "--priority", "3", "--", "make", "nightly")
	if r.code != 0 || !regexp.MustCompile(`^schedule nightly created: next run .+ \(in [0-9hms]+\)\n$`).MatchString(r.stdout) {
		t.Fatalf("schedules create: %+v", r)
	}
	if r := run(srv, "schedules", "create", "daily", "--cron", "@daily", "--missed", "run_once", "--", "true"); r.code != 0 {
		t.Fatalf("--missed as the setting spells it: %+v", r)
	}
	if r := run(srv, "schedules", "delete", "daily"); r.code != 0 {
		t.Fatalf("schedules delete: %+v", r)
	}
	if r := run(srv, "schedules", "create", "poll", "--cron", "@every 10m", "--missed", "skip", "--shell", "curl -fsS https://example.com/"); r.code != 0 {
		t.Fatalf("schedules create poll: %+v", r)
	}
	r = run(srv, "schedules", "list")
	lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
	if r.code != 0 || len(lines) != 3 || !strings.HasPrefix(lines[0], "NAME ") || !strings.Contains(lines[0], "NEXT RUN") ||
		!strings.Contains(lines[0], "LAST RUN") || !strings.Contains(lines[0], "LAST JOB") {
		t.Fatalf("schedules list: %+v", r)
	}
	if !regexp.MustCompile(`^nightly\s+0 3 \* \* \*\s+Europe/Paris\s+builds\s+active\s+.+\(in .+\)\s+-\s+-\s+make nightly$`).MatchString(lines[1]) {
		t.Errorf("nightly row: %q", lines[1])
	}
	if !regexp.MustCompile(`^poll\s+@every 10m\s+UTC\s+default\s+active\s+.+\(in (9m5\d|10m0)s\)`).MatchString(lines[2]) {
		t.Errorf("poll row: %q", lines[2])
	}
	r = run(srv, "schedules", "get", "nightly")
	for _, want := range []string{`(?m)^Cron:\s+0 3 \* \* \* \(Europe/Paris\)$`, `(?m)^Queue:\s+builds$`, `(?m)^Command:\s+make nightly$`,
		`(?m)^Priority:\s+3$`, `(?m)^Overlap:\s+skip$`, `(?m)^Missed ticks:\s+run-once$`} {
		if !regexp.MustCompile(want).MatchString(r.stdout) {
			t.Errorf("schedules get does not match %s:\n%s", want, r.stdout)
		}
	}
	r = run(srv, "schedules", "get", "poll", "--json")
	var s jobjson.Schedule
	if err := json.Unmarshal([]byte(r.stdout), &s); err != nil || s.Missed != "skip" || s.Overlap != "allow" || s.Job.Script == "" || s.NextTickAt.IsZero() {
		t.Fatalf("schedules get --json: %v %+v", err, r)
	}

	if r := run(srv, "schedules", "pause", "nightly"); r.code != 0 || r.stdout != "schedule nightly paused: no ticks run until spool schedules resume nightly\n" {
		t.Errorf("pause: %+v", r)
	}
	if r := run(srv, "schedules", "list"); !regexp.MustCompile(`(?m)^nightly .+ paused\s+none \(paused\)`).MatchString(r.stdout) {
		t.Errorf("the list does not show the pause:\n%s", r.stdout)
	}
	if r := run(srv, "schedules", "resume", "nightly"); r.code != 0 || !strings.HasPrefix(r.stdout, "schedule nightly resumed: next run ") {
		t.Errorf("resume: %+v", r)
	}
	if r := run(srv, "schedules", "delete", "nightly"); r.code != 0 || r.stdout != "schedule nightly deleted; the jobs it made stay\n" {
		t.Errorf("delete: %+v", r)
	}
	if r := run(srv, "schedules", "get", "nightly"); r.code != 1 || !strings.Contains(r.stderr, "nightly") {
		t.Errorf("get of a deleted schedule: %+v", r)
	}

	wantRefusal(t, "--overlap nevr", run(srv, "schedules", "create", "x", "--cron", "@hourly", "--overlap", "nevr", "--", "true"),
		`invalid argument "nevr" for "--overlap" flag: "nevr" is not one of allow or skip`)
	wantRefusal(t, "--missed run-onc", run(srv, "schedules", "create", "x", "--cron", "@hourly", "--missed", "run-onc", "--", "true"),
		`invalid argument "run-onc" for "--missed" flag: "run-onc" is not one of run-once or skip; did you mean run-once?`)
	if r := run(srv, "schedules", "create", "x", "--cron", "every day", "--", "true"); r.code != 1 || !strings.Contains(r.stderr, "every day") {
		t.Errorf("a bad cron: %+v", r)
	}
	wantRefusal(t, "a schedule of nothing", run(srv, "schedules", "create", "x", "--cron", "@hourly"),
		"say what each tick runs: spool schedules create x --cron '@hourly' -- make nightly (or --shell '...')")
	if r := run(srv, "schedules", "create", "x", "--", "true"); r.code != 1 || !strings.Contains(r.stderr, "cron") {
		t.Errorf("no --cron: %+v", r)
	}
	if r := run(srv, "schedules", "lst"); r.code != 1 || !strings.Contains(r.stderr, "did you mean list?") {
		t.Errorf("a typo of a command: %+v", r)
	}
}

// TestJobsGetDeliveriesFromTheServer: the tries a server made of a job's
// webhooks show in jobs get, the one that answered and the one that did
// not.
func TestJobsGetDeliveriesFromTheServer(t *testing.T) {
	t.Parallel()
	hooks := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/broken" {
			http.Error(w, "down", http.StatusBadGateway)
		}
	}))
	defer hooks.Close()
	srv := spooltest.NewServer(t, spooltest.Config{Server: func(c *server.Config) { c.Notify.AllowPrivateAddresses = true }})
	id := strings.TrimSpace(run(srv, "submit", "-q", "hooked", "--notify", hooks.URL+"/ok", "--notify", hooks.URL+"/broken", "--", "make").stdout)
	l := spooltest.LeaseJob(t, srv, "hooked")
	l.Begin()
	l.End(0)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for {
		j, err := srv.Client().Job(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if len(j.Deliveries) >= 2 {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatalf("the webhooks were not tried: %+v", j.Deliveries)
		case <-time.After(20 * time.Millisecond):
		}
	}
	r := run(srv, "jobs", "get", id)
	for _, want := range []string{
		`(?m)^\S+ \S+\s+` + regexp.QuoteMeta(hooks.URL) + `/ok\s+1\s+200\s+\S+\s+delivered$`,
		`(?m)^\S+ \S+\s+` + regexp.QuoteMeta(hooks.URL) + `/broken\s+1\s+502\s+\S+\s+failed: .+$`,
		`(?m)^Next delivery:\s+.+ \(in \d+s\)$`,
	} {
		if !regexp.MustCompile(want).MatchString(r.stdout) {
			t.Errorf("jobs get does not match %s:\n%s", want, r.stdout)
		}
	}
}

// TestJobsGetDeliveries: jobs get lists each try of a job's webhooks
// under the job, with its time, URL, try, status, duration and what went
// wrong, and says when the next try is due.
func TestJobsGetDeliveries(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 11, 28, 9, 30, 0, 0, time.Local)
	j := &spool.Job{ID: "j1", Queue: "default", State: spool.Succeeded, CreatedAt: at, Params: spool.JobParams{Argv: []string{"make"}},
		Notify: []string{"https://example.com/hook", "https://ops.example.com/x"}, NotifyDue: time.Now().Add(40 * time.Second),
		Deliveries: []spool.Delivery{
			{ID: "d1", URL: "https://example.com/hook", Try: 1, At: at, Status: 503, Error: "503 Service Unavailable", Took: 120 * time.Millisecond},
			{ID: "d1", URL: "https://example.com/hook", Try: 2, At: at.Add(10 * time.Second), Status: 200, Took: 80 * time.Millisecond, Delivered: true},
			{ID: "d2", URL: "https://ops.example.com/x", Try: 1, At: at, Error: "connection refused", Took: 2 * time.Millisecond},
		}}
	var out strings.Builder
	printJob(&env{out: &out}, j)
	got := out.String()
	for _, want := range []string{
		`(?m)^Notify:\s+https://example.com/hook, https://ops.example.com/x$`,
		`(?m)^Next delivery:\s+.+ \(in (39|40)s\)$`,
		`(?m)^Deliveries:$`,
		`(?m)^TIME\s+URL\s+TRY\s+STATUS\s+TOOK\s+RESULT$`,
		`(?m)^2026-11-28 09:30:00\s+https://example.com/hook\s+1\s+503\s+120ms\s+failed: 503 Service Unavailable$`,
		`(?m)^2026-11-28 09:30:10\s+https://example.com/hook\s+2\s+200\s+80ms\s+delivered$`,
		`(?m)^2026-11-28 09:30:00\s+https://ops.example.com/x\s+1\s+-\s+2ms\s+failed: connection refused$`,
	} {
		if !regexp.MustCompile(want).MatchString(got) {
			t.Errorf("jobs get does not match %s:\n%s", want, got)
		}
	}
}
