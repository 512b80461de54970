package client_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/spool-run/spool"
	"github.com/spool-run/spool/client"
	"github.com/spool-run/spool/spooltest"
)

// TestSubmitWhenAndAfter: a delayed job is scheduled for the time asked,
// with its priority and notify URLs; a job after another waits for it and
// the other names it as a follower; the queue counts both.
func TestSubmitWhenAndAfter(t *testing.T) {
	srv := spooltest.NewServer(t)
	c := srv.Client()
	ctx := context.Background()
	at := time.Now().Add(time.Hour).Truncate(time.Second)
	delayed, _, err := c.Submit(ctx, client.SubmitParams{Queue: "ci", Argv: []string{"make"}, RunAt: at, Priority: 1,
		Notify: []string{"https://example.com/hook"}})
	if err != nil {
		t.Fatal(err)
	}
	if delayed.State != spool.Scheduled || !delayed.RunAfter.Equal(at) || delayed.Priority != 1 ||
		!slices.Equal(delayed.Notify, []string{"https://example.com/hook"}) {
		t.Fatalf("the delayed job: %+v", delayed)
	}
	in, _, err := c.Submit(ctx, client.SubmitParams{Queue: "ci", Argv: []string{"make"}, RunIn: 30 * time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	if in.State != spool.Scheduled || in.RunAfter.Before(time.Now().Add(29*time.Minute)) || in.Priority != 2 {
		t.Fatalf("the job run in 30m: %+v", in)
	}
	next, _, err := c.Submit(ctx, client.SubmitParams{Queue: "ci", Argv: []string{"deploy"}, After: []string{delayed.ID}})
	if err != nil {
		t.Fatal(err)
	}
	if next.State != spool.Scheduled || !slices.Equal(next.After, []string{delayed.ID}) {
		t.Fatalf("the job after it: %+v", next)
	}
	first, err := c.Job(ctx, delayed.ID)
	if err != nil || !slices.Equal(first.Followers, []string{next.ID}) {
		t.Fatalf("the first job does not name its follower: %+v, %v", first, err)
	}
	listed, _, err := c.JobsPage(ctx, client.ListParams{States: []spool.State{spool.Scheduled}})
	if err != nil || len(listed) != 3 {
		t.Fatalf("scheduled jobs listed: %d, %v", len(listed), err)
	}
	qs, _, err := c.Queues(ctx)
	if err != nil || len(qs) != 1 || qs[0].Scheduled != 3 || qs[0].Queued != 0 {
		t.Fatalf("queues: %+v, %v", qs, err)
	}

	// What cannot be asked is refused before it is sent, or by the server,
	// as an invalid argument either way.
	for name, p := range map[string]client.SubmitParams{
		"both times":    {Argv: []string{"x"}, RunAt: at, RunIn: time.Minute},
		"priority 5":    {Argv: []string{"x"}, Priority: 5},
		"after nothing": {Argv: []string{"x"}, After: []string{"no-such-job"}},
		"a ftp hook":    {Argv: []string{"x"}, Notify: []string{"ftp://example.com/"}},
	} {
		if _, _, err := c.Submit(ctx, p); !errors.Is(err, spool.ErrInvalidArgument) && !errors.Is(err, spool.ErrNotFound) {
			t.Errorf("%s: %v", name, err)
		}
	}
}

// TestSetMaxRunning: a queue's limit is set, shown, and lifted with 0; a
// key that may only read may not set it.
func TestSetMaxRunning(t *testing.T) {
	srv := spooltest.NewServer(t)
	c := srv.Client()
	ctx := context.Background()
	q, err := c.SetMaxRunning(ctx, "builds", 3)
	if err != nil || q.Name != "builds" || q.MaxRunning != 3 {
		t.Fatalf("SetMaxRunning: %+v, %v", q, err)
	}
	qs, _, err := c.Queues(ctx)
	if err != nil || len(qs) != 1 || qs[0].MaxRunning != 3 {
		t.Fatalf("queues after the limit: %+v, %v", qs, err)
	}
	if q, err = c.ConfigureQueue(ctx, "builds", client.QueueConfig{}); err != nil || q.MaxRunning != 3 {
		t.Fatalf("a configuration of nothing changed the limit: %+v, %v", q, err)
	}
	if q, err = c.SetMaxRunning(ctx, "builds", 0); err != nil || q.MaxRunning != 0 {
		t.Fatalf("lifting the limit: %+v, %v", q, err)
	}
	if _, err := c.SetMaxRunning(ctx, "builds", -1); !errors.Is(err, spool.ErrInvalidArgument) {
		t.Fatalf("a negative limit: %v", err)
	}
	reader, err := client.New(client.Config{URL: srv.URL, APIKey: srv.Key(t, spool.RoleRead)})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := reader.SetMaxRunning(ctx, "builds", 1); !errors.Is(err, spool.ErrPermissionDenied) {
		t.Fatalf("a read key set a limit: %v", err)
	}
}

// TestSchedules: a schedule is created with its policies and next tick,
// listed, paused (no next tick), resumed and deleted; its errors are the
// kinds callers branch on.
func TestSchedules(t *testing.T) {
	srv := spooltest.NewServer(t)
	c := srv.Client()
	ctx := context.Background()
	s, err := c.CreateSchedule(ctx, client.ScheduleParams{Name: "nightly", Cron: "0 3 * * *", Timezone: "Europe/Paris",
		Job: client.SubmitParams{Queue: "builds", Argv: []string{"make", "nightly"}, Priority: 3}, Overlap: spool.OverlapSkip})
	if err != nil {
		t.Fatal(err)
	}
	paris, _ := time.LoadLocation("Europe/Paris")
	next := s.NextTickAt.In(paris)
	if s.Name != "nightly" || s.Overlap != spool.OverlapSkip || s.Missed != spool.MissedRunOnce || s.Paused ||
		next.Hour() != 3 || next.Minute() != 0 || !next.After(time.Now()) || s.Job.Queue != "builds" || s.Job.Priority != 3 ||
		!slices.Equal(s.Job.Params.Argv, []string{"make", "nightly"}) {
		t.Fatalf("created: %+v (next tick %v)", s, next)
	}
	if _, err := c.CreateSchedule(ctx, client.ScheduleParams{Name: "nightly", Cron: "@hourly", Job: client.SubmitParams{Argv: []string{"x"}}}); !errors.Is(err, spool.ErrAlreadyExists) {
		t.Errorf("a second schedule of the name: %v", err)
	}
	if _, err := c.CreateSchedule(ctx, client.ScheduleParams{Name: "bad", Cron: "every day", Job: client.SubmitParams{Argv: []string{"x"}}}); !errors.Is(err, spool.ErrInvalidArgument) {
		t.Errorf("a bad cron: %v", err)
	}
	if _, err := c.CreateSchedule(ctx, client.ScheduleParams{Name: "later", Cron: "@hourly", Job: client.SubmitParams{Argv: []string{"x"}, RunIn: time.Minute}}); !errors.Is(err, spool.ErrInvalidArgument) {
		t.Errorf("a schedule's job with a delay: %v", err)
	}
	if _, err := c.CreateSchedule(ctx, client.ScheduleParams{Name: "often", Cron: "@every 10m", Job: client.SubmitParams{Script: "date"}}); err != nil {
		t.Fatal(err)
	}
	all, err := c.Schedules(ctx)
	if err != nil || len(all) != 2 || all[0].Name != "nightly" || all[1].Name != "often" {
		t.Fatalf("list: %+v, %v", all, err)
	}
	if s, err = c.PauseSchedule(ctx, "nightly"); err != nil || !s.Paused || !s.NextTickAt.IsZero() {
		t.Fatalf("paused: %+v, %v", s, err)
	}
	if s, err = c.ResumeSchedule(ctx, "nightly"); err != nil || s.Paused || s.NextTickAt.IsZero() {
		t.Fatalf("resumed: %+v, %v", s, err)
	}
	if err := c.DeleteSchedule(ctx, "nightly"); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Schedule(ctx, "nightly"); !errors.Is(err, spool.ErrNotFound) {
		t.Fatalf("a deleted schedule: %v", err)
	}
	if got, err := c.Schedule(ctx, "often"); err != nil || got.Cron != "@every 10m" {
		t.Fatalf("get: %+v, %v", got, err)
	}
}
