package service

import (
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/spool-run/spool"
	spoolv1 "github.com/spool-run/spool/gen/spool/v1"
	"github.com/spool-run/spool/internal/config"
	"github.com/spool-run/spool/internal/store"
)

func newSchedule(name, cron string) *spoolv1.Schedule {
	return &spoolv1.Schedule{Name: name, Cron: cron, Job: &spoolv1.EnqueueJobRequest{Queue: "nightly", Params: argv("make", "report")}}
}

// Schedules are checked as they are created, answered with their next
// tick, paused and resumed, listed to those who may read their queue, and
// deleted by those who may submit to it.
func TestScheduleLifecycle(t *testing.T) {
	b := newBatchCore(t)
	admin := b.key(t, "admin", spoolv1.KeyRole_KEY_ROLE_ADMIN)
	reader := b.key(t, "reader", spoolv1.KeyRole_KEY_ROLE_READ)
	limited := b.key(t, "builds-only", spoolv1.KeyRole_KEY_ROLE_SUBMIT, "builds")

	for _, c := range []struct {
		s    *spoolv1.Schedule
		want string
	}{
		{newSchedule("bad name!", "@hourly"), "schedule name"},
		{newSchedule("x", "61 * * * *"), "cron \"61 * * * *\""},
		{newSchedule("x", ""), "cron is required"},
		{newSchedule("x", "TZ=Europe/Berlin 0 3 * * *"), "give the time zone in timezone"},
		{newSchedule("x", "0 0 30 2 *"), "never fires"},
		{&spoolv1.Schedule{Name: "x", Cron: "@daily", Timezone: "Mars/Olympus", Job: newSchedule("", "").Job}, "not an IANA time zone"},
		{&spoolv1.Schedule{Name: "x", Cron: "@daily", Timezone: "Local", Job: newSchedule("", "").Job}, "Local is each server's own zone"},
		{&spoolv1.Schedule{Name: "x", Cron: "@daily"}, "job is required"},
		{&spoolv1.Schedule{Name: "x", Cron: "@daily", Job: &spoolv1.EnqueueJobRequest{Params: argv("x"), RequestId: "r"}}, "job.request_id"},
		{&spoolv1.Schedule{Name: "x", Cron: "@daily", Job: &spoolv1.EnqueueJobRequest{Params: argv("x"), Secrets: map[string]string{"TOKEN": "0123456789abcdef"}}}, "job.secrets"},
		{&spoolv1.Schedule{Name: "x", Cron: "@daily", Job: &spoolv1.EnqueueJobRequest{}}, "params"},
		{&spoolv1.Schedule{Name: "x", Cron: "@daily", Job: &spoolv1.EnqueueJobRequest{Params: argv("x"), Notify: []string{"gopher://x"}}}, "only http"},
	} {
		_, err := b.s.CreateSchedule(admin, &spoolv1.CreateScheduleRequest{Schedule: c.s})
		wantInvalid(t, c.s.GetName()+" "+c.s.GetCron(), err, c.want)
	}

	resp, err := b.s.CreateSchedule(admin, &spoolv1.CreateScheduleRequest{Schedule: &spoolv1.Schedule{Name: "report", Cron: "0 3 * * *",
		Timezone: "Europe/Berlin", Job: newSchedule("", "").Job, Overlap: spoolv1.Overlap_OVERLAP_SKIP}})
	if err != nil {
		t.Fatal(err)
	}
	sc := resp.GetSchedule()
	next := sc.GetNextTickAt().AsTime().In(mustZone(t, "Europe/Berlin"))
	if next.Hour() != 3 || next.Minute() != 0 || !next.After(time.Now()) || next.After(time.Now().Add(25*time.Hour)) {
		t.Errorf("next tick %v, want the next 03:00 in Berlin", next)
	}
	if sc.GetMissed() != spoolv1.Missed_MISSED_RUN_ONCE || sc.GetOverlap() != spoolv1.Overlap_OVERLAP_SKIP || sc.GetRevision() != 1 {
		t.Errorf("missed %v, overlap %v, revision %d; want the server's default, skip, 1", sc.GetMissed(), sc.GetOverlap(), sc.GetRevision())
	}
	if _, err := b.s.CreateSchedule(admin, &spoolv1.CreateScheduleRequest{Schedule: newSchedule("report", "@hourly")}); !errors.Is(err, spool.ErrAlreadyExists) {
		t.Errorf("a second schedule named report: %v, want already exists", err)
	}
	if _, err := b.s.CreateSchedule(limited, &spoolv1.CreateScheduleRequest{Schedule: newSchedule("sneaky", "@hourly")}); !errors.Is(err, spool.ErrPermissionDenied) {
		t.Errorf("a key limited to builds schedules a nightly job: %v, want permission denied", err)
	}
	if _, err := b.s.CreateSchedule(reader, &spoolv1.CreateScheduleRequest{Schedule: newSchedule("r", "@hourly")}); !errors.Is(err, spool.ErrPermissionDenied) {
		t.Errorf("a read key creates a schedule: %v, want permission denied", err)
	}

	paused, err := b.s.PauseSchedule(admin, &spoolv1.PauseScheduleRequest{Name: "report"})
	if err != nil || !paused.GetSchedule().GetPaused() || paused.GetSchedule().GetNextTickAt() != nil {
		t.Fatalf("pause: %v, %v; want paused with no next tick", paused.GetSchedule(), err)
	}
	resumed, err := b.s.ResumeSchedule(admin, &spoolv1.ResumeScheduleRequest{Name: "report"})
	if err != nil || resumed.GetSchedule().GetPaused() || resumed.GetSchedule().GetNextTickAt() == nil {
		t.Fatalf("resume: %v, %v", resumed.GetSchedule(), err)
	}
	if got, err := b.s.GetSchedule(reader, &spoolv1.GetScheduleRequest{Name: "report"}); err != nil || got.GetSchedule().GetRevision() != 3 {
		t.Errorf("get: %v, %v; want revision 3", got.GetSchedule(), err)
	}
	if list, err := b.s.ListSchedules(limited, &spoolv1.ListSchedulesRequest{}); err != nil || len(list.GetSchedules()) != 0 {
		t.Errorf("a key limited to builds lists %v, %v; want none", list.GetSchedules(), err)
	}
	if _, err := b.s.GetSchedule(limited, &spoolv1.GetScheduleRequest{Name: "report"}); !errors.Is(err, spool.ErrNotFound) {
		t.Errorf("a key limited to builds reads a nightly schedule: %v, want not found", err)
	}
	if _, err := b.s.DeleteSchedule(reader, &spoolv1.DeleteScheduleRequest{Name: "report"}); !errors.Is(err, spool.ErrPermissionDenied) {
		t.Errorf("a read key deletes: %v, want permission denied", err)
	}
	if _, err := b.s.DeleteSchedule(admin, &spoolv1.DeleteScheduleRequest{Name: "report"}); err != nil {
		t.Fatal(err)
	}
	if _, err := b.s.GetSchedule(admin, &spoolv1.GetScheduleRequest{Name: "report"}); !errors.Is(err, spool.ErrNotFound) {
		t.Errorf("get after delete: %v, want not found", err)
	}
}

func mustZone(t *testing.T, name string) *time.Location {
	t.Helper()
	loc, err := time.LoadLocation(name)
	if err != nil {
		t.Fatal(err)
	}
	return loc
}

// ticking is a store shared by several cores (servers) and a schedule
// made on it.
type ticking struct {
	cores   []*Service
	o       *operator
	created time.Time
}

func newTicking(t *testing.T, servers int, sc *spoolv1.Schedule) *ticking {
	t.Helper()
	o := newOperator(t)
	tk := &ticking{o: o, cores: []*Service{o.s}}
	for range servers - 1 {
		cfg := config.Default()
		cfg.Auth.Disabled = true
		tk.cores = append(tk.cores, newCore(t, o.st, cfg, make([]byte, 32)))
	}
	resp, err := o.s.CreateSchedule(o.ctx, &spoolv1.CreateScheduleRequest{Schedule: sc})
	if err != nil {
		t.Fatal(err)
	}
	// Ticks fall on whole seconds.
	tk.created = resp.GetSchedule().GetCreatedAt().AsTime().Truncate(time.Second)
	return tk
}

// tick has every server run the ticks due at now, at once.
func (tk *ticking) tick(t *testing.T, now time.Time) {
	t.Helper()
	var wg sync.WaitGroup
	errs := make([]error, len(tk.cores))
	for i, c := range tk.cores {
		wg.Go(func() { _, errs[i] = c.RunTicks(tk.o.ctx, now) })
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
}

// jobs are the schedule's jobs, oldest first.
func (tk *ticking) jobs(t *testing.T) []*spoolv1.Job {
	t.Helper()
	all, _, err := tk.o.st.List(tk.o.ctx, store.ListFilter{Queue: "nightly", Limit: 1000})
	if err != nil {
		t.Fatal(err)
	}
	var out []*spoolv1.Job
	for i := len(all) - 1; i >= 0; i-- {
		if all[i].GetSchedule() != "" {
			out = append(out, all[i])
		}
	}
	return out
}

func (tk *ticking) schedule(t *testing.T, name string) *spoolv1.Schedule {
	t.Helper()
	sc, err := tk.o.st.GetSchedule(tk.o.ctx, name)
	if err != nil {
		t.Fatal(err)
	}
	return sc
}

// Three servers running every tick at once make exactly one job per
// tick, with the tick in its request id, and record the tick once.
func TestTicksExactlyOnce(t *testing.T) {
	tk := newTicking(t, 3, newSchedule("every-minute", "@every 1m"))
	tk.tick(t, tk.created.Add(30*time.Second))
	if n := len(tk.jobs(t)); n != 0 {
		t.Fatalf("%d jobs before the first tick", n)
	}
	for i := 1; i <= 3; i++ {
		tk.tick(t, tk.created.Add(time.Duration(i)*time.Minute+time.Second))
		tk.tick(t, tk.created.Add(time.Duration(i)*time.Minute+2*time.Second))
		jobs := tk.jobs(t)
		if len(jobs) != i {
			t.Fatalf("after tick %d: %d jobs, want %d", i, len(jobs), i)
		}
		tick := tk.created.Add(time.Duration(i) * time.Minute)
		j := jobs[i-1]
		if j.GetRequestId() != TickRequestID("every-minute", tick) || j.GetSchedule() != "every-minute" {
			t.Errorf("tick %d's job: request id %q, schedule %q; want %q", i, j.GetRequestId(), j.GetSchedule(), TickRequestID("every-minute", tick))
		}
		sc := tk.schedule(t, "every-minute")
		if !sc.GetLastTickAt().AsTime().Equal(tick) || sc.GetLastJobId() != j.GetJobId() {
			t.Errorf("tick %d recorded as %v (job %s), want %v (job %s)", i, sc.GetLastTickAt().AsTime(), sc.GetLastJobId(), tick, j.GetJobId())
		}
	}
}

// A round that comes late, within the grace (a busy machine), makes a
// job for every tick it finds due, each its own, across three servers.
func TestLateRoundRunsEveryTick(t *testing.T) {
	sc := newSchedule("every-second", "* * * * * *")
	tk := newTicking(t, 3, sc)
	from := tk.created.Truncate(time.Second)
	tk.tick(t, from.Add(6*time.Second))
	jobs := tk.jobs(t)
	if len(jobs) != 6 {
		t.Fatalf("a round 6 s late made %d jobs, want one per tick (6)", len(jobs))
	}
	seen := map[string]bool{}
	for _, j := range jobs {
		seen[j.GetRequestId()] = true
	}
	for i := 1; i <= 6; i++ {
		if id := TickRequestID("every-second", from.Add(time.Duration(i)*time.Second)); !seen[id] {
			t.Errorf("no job of tick %s", id)
		}
	}
}

// Ticks missed while no server ran come to one job (run_once) or none
// (skip); either way the schedule goes on from the latest.
func TestMissedTicks(t *testing.T) {
	for _, c := range []struct {
		missed spoolv1.Missed
		jobs   int
	}{{spoolv1.Missed_MISSED_RUN_ONCE, 1}, {spoolv1.Missed_MISSED_SKIP, 0}} {
		t.Run(c.missed.String(), func(t *testing.T) {
			sc := newSchedule("hourly", "@every 1h")
			sc.Missed = c.missed
			tk := newTicking(t, 1, sc)
			latest := tk.created.Add(10 * time.Hour)
			tk.tick(t, latest.Add(20*time.Minute))
			jobs := tk.jobs(t)
			if len(jobs) != c.jobs {
				t.Fatalf("after 10 missed ticks: %d jobs, want %d", len(jobs), c.jobs)
			}
			if c.jobs == 1 && jobs[0].GetRequestId() != TickRequestID("hourly", latest) {
				t.Errorf("the job is of tick %q, want the latest (%v)", jobs[0].GetRequestId(), latest)
			}
			if got := tk.schedule(t, "hourly").GetLastTickAt().AsTime(); !got.Equal(latest) {
				t.Errorf("last tick %v, want %v", got, latest)
			}
			tk.tick(t, latest.Add(time.Hour+time.Second))
			if n := len(tk.jobs(t)); n != c.jobs+1 {
				t.Errorf("the next tick on time: %d jobs, want %d", n, c.jobs+1)
			}
		})
	}
}

// With overlap skip, a tick makes no job while the last one has not
// ended, and still counts as run.
func TestOverlapSkip(t *testing.T) {
	sc := newSchedule("sync", "@every 1m")
	sc.Overlap = spoolv1.Overlap_OVERLAP_SKIP
	tk := newTicking(t, 2, sc)
	tk.tick(t, tk.created.Add(time.Minute))
	tk.tick(t, tk.created.Add(2*time.Minute))
	if jobs := tk.jobs(t); len(jobs) != 1 {
		t.Fatalf("with the first job queued: %d jobs, want 1", len(jobs))
	}
	if got := tk.schedule(t, "sync").GetLastTickAt().AsTime(); !got.Equal(tk.created.Add(2 * time.Minute)) {
		t.Errorf("the skipped tick is not recorded: last tick %v", got)
	}
	tk.o.run(t, "nightly", 0)
	tk.tick(t, tk.created.Add(3*time.Minute))
	if jobs := tk.jobs(t); len(jobs) != 2 || jobs[1].GetRequestId() != TickRequestID("sync", tk.created.Add(3*time.Minute)) {
		t.Errorf("after the first job ended: %d jobs, want a second of the third tick", len(jobs))
	}
}

// A paused schedule makes no job; resumed, it skips the ticks it was
// paused through.
func TestPausedScheduleSkipsTicks(t *testing.T) {
	tk := newTicking(t, 1, newSchedule("p", "@every 1s"))
	if _, err := tk.o.s.PauseSchedule(tk.o.ctx, &spoolv1.PauseScheduleRequest{Name: "p"}); err != nil {
		t.Fatal(err)
	}
	tk.tick(t, tk.created.Add(time.Hour))
	if n := len(tk.jobs(t)); n != 0 {
		t.Fatalf("a paused schedule made %d jobs", n)
	}
	resp, err := tk.o.s.ResumeSchedule(tk.o.ctx, &spoolv1.ResumeScheduleRequest{Name: "p"})
	if err != nil {
		t.Fatal(err)
	}
	resumedAt := resp.GetSchedule().GetLastTickAt().AsTime()
	tk.tick(t, resumedAt)
	if n := len(tk.jobs(t)); n != 0 {
		t.Fatalf("the ticks paused through made %d jobs", n)
	}
	next := resumedAt.Truncate(time.Second).Add(time.Second)
	tk.tick(t, next)
	if jobs := tk.jobs(t); len(jobs) != 1 || jobs[0].GetRequestId() != TickRequestID("p", next) {
		t.Fatalf("the first tick after the resume: %d jobs, want one of %v", len(jobs), next)
	}
}

// A tick whose job is refused (its request id names another job) is
// recorded without one, so the schedule goes on to its next tick.
func TestRefusedTickIsPassed(t *testing.T) {
	tk := newTicking(t, 1, newSchedule("taken", "@every 1m"))
	first := tk.created.Add(time.Minute)
	if _, err := tk.o.s.EnqueueJob(tk.o.ctx, &spoolv1.EnqueueJobRequest{Queue: "nightly", Params: argv("other"), RequestId: TickRequestID("taken", first)}); err != nil {
		t.Fatal(err)
	}
	tk.tick(t, first.Add(time.Second))
	if sc := tk.schedule(t, "taken"); !sc.GetLastTickAt().AsTime().Equal(first) || sc.GetLastJobId() != "" {
		t.Fatalf("the refused tick: last tick %v, job %q; want %v and none", sc.GetLastTickAt().AsTime(), sc.GetLastJobId(), first)
	}
	tk.tick(t, first.Add(time.Minute+time.Second))
	if jobs := tk.jobs(t); len(jobs) != 1 || jobs[0].GetRequestId() != TickRequestID("taken", first.Add(time.Minute)) {
		t.Errorf("the next tick: %d jobs, want one of %v", len(jobs), first.Add(time.Minute))
	}
}
