package service

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"time"

	"connectrpc.com/connect"
	"github.com/robfig/cron/v3"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/spool-run/spool"
	spoolv1 "github.com/spool-run/spool/gen/spool/v1"
	"github.com/spool-run/spool/internal/apierr"
	"github.com/spool-run/spool/internal/convert"
	"github.com/spool-run/spool/internal/store"
	"github.com/spool-run/spool/internal/store/storekit"
)

// Bounds on a schedule.
const (
	maxScheduleName = 80
	maxCron         = 200
	maxTimezone     = 100
)

var scheduleName = regexp.MustCompile(`^[A-Za-z0-9._-]+$`)

// cronParser reads a schedule's expression: five fields, or six with
// seconds first, or a descriptor (@hourly, @every 10s).
var cronParser = cron.NewParser(cron.SecondOptional | cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow | cron.Descriptor)

// CreateSchedule stores a new schedule. Creating one is submitting to its
// job's queue, every tick: it needs what submitting there does.
func (s *Service) CreateSchedule(ctx context.Context, m *spoolv1.CreateScheduleRequest) (*spoolv1.CreateScheduleResponse, error) {
	in := m.GetSchedule()
	if in == nil {
		return nil, invalid("schedule is required: its name, cron and job")
	}
	caller, err := s.authorize(ctx, PermSubmit, in.GetJob().GetQueue())
	if err != nil {
		return nil, err
	}
	if err := checkScheduleName(in.GetName()); err != nil {
		return nil, err
	}
	if _, _, err := parseCron(in.GetCron(), in.GetTimezone()); err != nil {
		return nil, err
	}
	job, err := s.checkTemplate(caller, in.GetJob())
	if err != nil {
		return nil, err
	}
	if _, ok := spoolv1.Overlap_name[int32(in.GetOverlap())]; !ok {
		return nil, invalid("overlap: %d is not a policy; use allow or skip", int32(in.GetOverlap()))
	}
	if _, ok := spoolv1.Missed_name[int32(in.GetMissed())]; !ok {
		return nil, invalid("missed: %d is not a policy; use run_once or skip", int32(in.GetMissed()))
	}
	now := timestamppb.New(storekit.Now())
	sc := &spoolv1.Schedule{Name: in.GetName(), Cron: in.GetCron(), Timezone: in.GetTimezone(), Job: job,
		Overlap: in.GetOverlap(), Missed: in.GetMissed(), CreatedAt: now, UpdatedAt: now}
	if sc.Overlap == spoolv1.Overlap_OVERLAP_UNSPECIFIED {
		sc.Overlap = spoolv1.Overlap_OVERLAP_ALLOW
	}
	if sc.Missed == spoolv1.Missed_MISSED_UNSPECIFIED {
		sc.Missed = s.defaultMissed()
	}
	if err := s.store.CreateSchedule(ctx, sc); err != nil {
		if errors.Is(err, spool.ErrAlreadyExists) {
			return nil, apierr.Errorf(spool.ErrAlreadyExists, "schedule %q exists already: delete it first, or choose another name", sc.GetName())
		}
		return nil, s.fail(ctx, "CreateSchedule", err)
	}
	s.audit(ctx, caller, "schedule created", "schedule", sc.GetName(), "queue", job.GetQueue(), "cron", sc.GetCron())
	return &spoolv1.CreateScheduleResponse{Schedule: withNextTick(sc)}, nil
}

// GetSchedule returns one schedule, to whoever may read its jobs.
func (s *Service) GetSchedule(ctx context.Context, m *spoolv1.GetScheduleRequest) (*spoolv1.GetScheduleResponse, error) {
	_, sc, err := s.schedule(ctx, "GetSchedule", PermRead, m.GetName())
	if err != nil {
		return nil, err
	}
	return &spoolv1.GetScheduleResponse{Schedule: withNextTick(sc)}, nil
}

// ListSchedules returns the schedules whose jobs the caller may read, by
// name.
func (s *Service) ListSchedules(ctx context.Context, _ *spoolv1.ListSchedulesRequest) (*spoolv1.ListSchedulesResponse, error) {
	caller, err := s.authorize(ctx, PermRead, "")
	if err != nil {
		return nil, err
	}
	all, err := s.store.ListSchedules(ctx)
	if err != nil {
		return nil, s.fail(ctx, "ListSchedules", err)
	}
	out := make([]*spoolv1.Schedule, 0, len(all))
	for _, sc := range all {
		if caller.mayUse(sc.GetJob().GetQueue()) {
			out = append(out, withNextTick(sc))
		}
	}
	return &spoolv1.ListSchedulesResponse{Schedules: out}, nil
}

// PauseSchedule stops a schedule's ticks.
func (s *Service) PauseSchedule(ctx context.Context, m *spoolv1.PauseScheduleRequest) (*spoolv1.PauseScheduleResponse, error) {
	sc, err := s.setSchedulePaused(ctx, "PauseSchedule", m.GetName(), true)
	if err != nil {
		return nil, err
	}
	return &spoolv1.PauseScheduleResponse{Schedule: sc}, nil
}

// ResumeSchedule starts a paused schedule's ticks again, from now: the
// ticks that passed while it was paused are not run.
func (s *Service) ResumeSchedule(ctx context.Context, m *spoolv1.ResumeScheduleRequest) (*spoolv1.ResumeScheduleResponse, error) {
	sc, err := s.setSchedulePaused(ctx, "ResumeSchedule", m.GetName(), false)
	if err != nil {
		return nil, err
	}
	return &spoolv1.ResumeScheduleResponse{Schedule: sc}, nil
}

// DeleteSchedule removes a schedule; the jobs it made stay.
func (s *Service) DeleteSchedule(ctx context.Context, m *spoolv1.DeleteScheduleRequest) (*spoolv1.DeleteScheduleResponse, error) {
	caller, sc, err := s.schedule(ctx, "DeleteSchedule", PermSubmit, m.GetName())
	if err != nil {
		return nil, err
	}
	if err := s.store.DeleteSchedule(ctx, sc.GetName()); err != nil {
		return nil, s.fail(ctx, "DeleteSchedule", err)
	}
	s.audit(ctx, caller, "schedule deleted", "schedule", sc.GetName())
	return &spoolv1.DeleteScheduleResponse{}, nil
}

// schedule checks the caller may do perm and reads a schedule, which a
// key limited to other queues than its job's does not see.
func (s *Service) schedule(ctx context.Context, op string, perm Permission, name string) (Caller, *spoolv1.Schedule, error) {
	caller, err := s.authorize(ctx, perm, "")
	if err != nil {
		return Caller{}, nil, err
	}
	if name == "" {
		return Caller{}, nil, invalid("name is required: the schedule's name")
	}
	if checkScheduleName(name) != nil {
		return Caller{}, nil, store.ScheduleNotFound(truncate(name, maxScheduleName))
	}
	sc, err := s.store.GetSchedule(ctx, name)
	if err != nil {
		return Caller{}, nil, s.fail(ctx, op, err)
	}
	if !caller.mayUse(sc.GetJob().GetQueue()) {
		return Caller{}, nil, store.ScheduleNotFound(name)
	}
	return caller, sc, nil
}

// setSchedulePaused pauses or resumes a schedule, rereading it when
// another change (a tick) came between.
func (s *Service) setSchedulePaused(ctx context.Context, op, name string, paused bool) (*spoolv1.Schedule, error) {
	for range maxScheduleRetries {
		caller, sc, err := s.schedule(ctx, op, PermSubmit, name)
		if err != nil {
			return nil, err
		}
		if sc.GetPaused() == paused {
			return withNextTick(sc), nil
		}
		now := storekit.Now()
		sc.Paused, sc.UpdatedAt = paused, timestamppb.New(now)
		if !paused {
			// The ticks that passed while it was paused are not run: it
			// goes on as if the last tick were now.
			sc.LastTickAt = timestamppb.New(now)
		}
		err = s.store.UpdateSchedule(ctx, sc)
		if errors.Is(err, spool.ErrConflict) {
			continue
		}
		if err != nil {
			return nil, s.fail(ctx, op, err)
		}
		what := "schedule resumed"
		if paused {
			what = "schedule paused"
		}
		s.audit(ctx, caller, what, "schedule", name)
		return withNextTick(sc), nil
	}
	return nil, apierr.Errorf(spool.ErrConflict, "schedule %q kept changing while it was being paused or resumed; try again", name)
}

// maxScheduleRetries bounds the rereads of a schedule that changed under
// a pause or resume: ticks change it at most each second, so a few do.
const maxScheduleRetries = 10

// checkScheduleName refuses a name no schedule may have.
func checkScheduleName(name string) error {
	if len(name) > maxScheduleName || !scheduleName.MatchString(name) {
		return invalid("schedule name %q: use 1-%d letters, digits, '.', '_' or '-'", truncate(name, maxScheduleName), maxScheduleName)
	}
	return nil
}

// parseCron reads a schedule's expression in its time zone.
func parseCron(expr, tz string) (cron.Schedule, *time.Location, error) {
	if len(tz) > maxTimezone {
		return nil, nil, invalid("timezone: %d bytes; at most %d", len(tz), maxTimezone)
	}
	if tz == "Local" {
		// The servers sharing a store may each have another.
		return nil, nil, invalid("timezone: Local is each server's own zone; name the zone (Europe/Berlin) or leave it empty for UTC")
	}
	loc, err := time.LoadLocation(tz)
	if err != nil {
		return nil, nil, invalid("timezone %q is not an IANA time zone (like Europe/Berlin or America/New_York)", tz)
	}
	if len(expr) > maxCron {
		return nil, nil, invalid("cron: %d bytes; at most %d", len(expr), maxCron)
	}
	if strings.TrimSpace(expr) == "" {
		return nil, nil, invalid("cron is required: five fields (minute hour day-of-month month day-of-week), six with seconds first, or @hourly, @every 10m")
	}
	if t := strings.TrimSpace(expr); strings.HasPrefix(t, "TZ=") || strings.HasPrefix(t, "CRON_TZ=") {
		return nil, nil, invalid("cron %q: give the time zone in timezone, not in the expression", expr)
	}
	sched, err := cronParser.Parse(expr)
	if err != nil {
		return nil, nil, invalid("cron %q: %v (five fields: minute hour day-of-month month day-of-week; six with seconds first; or @hourly, @daily, @every 10m)", expr, err)
	}
	if sched.Next(time.Date(2000, 1, 1, 0, 0, 0, 0, loc)).IsZero() {
		return nil, nil, invalid("cron %q never fires (a date that does not exist, such as 30 February)", expr)
	}
	return sched, loc, nil
}

// checkTemplate checks the job a schedule enqueues as enqueue checks a
// job, and returns what is kept of it. What belongs to one job, not to
// every tick's, is refused rather than dropped.
func (s *Service) checkTemplate(caller Caller, t *spoolv1.EnqueueJobRequest) (*spoolv1.EnqueueJobRequest, error) {
	if t == nil {
		return nil, invalid("job is required: what each tick runs")
	}
	queue, err := checkQueue(t.GetQueue())
	if err != nil {
		return nil, err
	}
	if err := caller.useQueue(PermSubmit, queue); err != nil {
		return nil, err
	}
	switch {
	case t.GetRequestId() != "":
		return nil, invalid("job.request_id: each tick's job gets its own (schedule/NAME/TIME); leave it empty")
	case t.GetRunAt() != nil || t.GetRunIn() != nil:
		return nil, invalid("job.run_at, job.run_in: a tick's job runs at its tick; leave them empty")
	case len(t.GetAfter()) > 0:
		return nil, invalid("job.after: a tick's job cannot wait for given jobs, which run once; leave it empty")
	case len(t.GetSecrets()) > 0:
		return nil, invalid("job.secrets: a schedule is stored as it is, so it cannot hold secrets; have the job read them from where it runs")
	case t.GetRejectReason() != "":
		return nil, invalid("job.reject_reason: a schedule makes jobs to run")
	}
	if err := s.checkParams(t.GetParams(), false); err != nil {
		return nil, err
	}
	if err := noUpload(t.GetParams(), "a schedule, which makes many jobs,"); err != nil {
		return nil, err
	}
	if _, err := s.checkBudget(t.GetMaxAttempts(), t.GetRetries()); err != nil {
		return nil, err
	}
	if p := t.GetPriority(); p < 0 || p > store.LowestPriority {
		return nil, invalid("job.priority must be %d (first) to %d (last), or 0 for the default; got %d", store.HighestPriority, store.LowestPriority, p)
	}
	if _, err := s.notifyURLs(queue, t.GetNotify()); err != nil {
		return nil, err
	}
	return &spoolv1.EnqueueJobRequest{Queue: queue, Params: proto.CloneOf(t.GetParams()), MaxAttempts: t.GetMaxAttempts(),
		Retries: t.GetRetries(), Priority: t.GetPriority(), Notify: t.GetNotify()}, nil
}

// defaultMissed is schedules.missed.
func (s *Service) defaultMissed() spoolv1.Missed {
	if s.cfg.Schedules.Missed == "skip" {
		return spoolv1.Missed_MISSED_SKIP
	}
	return spoolv1.Missed_MISSED_RUN_ONCE
}

// ticksFrom is where a schedule's ticks count from: its last tick, or
// its creation.
func ticksFrom(sc *spoolv1.Schedule) time.Time {
	if sc.GetLastTickAt() != nil {
		return sc.GetLastTickAt().AsTime()
	}
	return sc.GetCreatedAt().AsTime()
}

// nextTick is a schedule's next tick after its last (zero when it has
// none, or its expression no longer reads).
func nextTick(sc *spoolv1.Schedule) time.Time {
	cs, loc, err := parseCron(sc.GetCron(), sc.GetTimezone())
	if err != nil {
		return time.Time{}
	}
	return cs.Next(ticksFrom(sc).In(loc))
}

// withNextTick is sc as answered: with its next tick, unless paused.
func withNextTick(sc *spoolv1.Schedule) *spoolv1.Schedule {
	sc = proto.CloneOf(sc)
	sc.NextTickAt = nil
	if next := nextTick(sc); !sc.GetPaused() && !next.IsZero() {
		sc.NextTickAt = timestamppb.New(next)
	}
	return sc
}

// scheduleCaller is who enqueues a schedule's jobs: the server itself,
// for whoever created the schedule (checked then).
var scheduleCaller = Caller{Name: "schedule", Role: spoolv1.KeyRole_KEY_ROLE_ADMIN}

// TickRequestID is the request id of the job a schedule's tick makes: the
// same on every server, so only one job is made per tick however many
// servers see it, and a server that restarts mid-tick makes none again.
func TickRequestID(name string, tick time.Time) string {
	return fmt.Sprintf("schedule/%s/%s", name, tick.UTC().Format(time.RFC3339))
}

// RunTicks enqueues the job of every unpaused schedule's due ticks at now
// and records them, and returns the earliest tick to come (zero: none
// known). A tick another server recorded first is left to it.
func (s *Service) RunTicks(ctx context.Context, now time.Time) (time.Time, error) {
	all, err := s.store.ListSchedules(ctx)
	if err != nil {
		return time.Time{}, err
	}
	var next time.Time
	var errs []error
	for _, sc := range all {
		if sc.GetPaused() {
			continue
		}
		n, err := s.catchUp(ctx, sc, now)
		if err != nil {
			errs = append(errs, fmt.Errorf("schedule %s: %w", sc.GetName(), err))
		}
		if !n.IsZero() && (next.IsZero() || n.Before(next)) {
			next = n
		}
	}
	return next, errors.Join(errs...)
}

// maxTicksPerRound bounds the ticks of one schedule one round runs: a
// round late by more (a schedule every second, a server stalled for
// minutes) leaves the rest to the next rounds, which follow at once.
const maxTicksPerRound = 100

// catchUp runs sc's due ticks at now one after the other, each its own
// job: a round that came late (a busy machine) still makes a job per
// tick. It stops when none is due, after maxTicksPerRound, or when
// another server recorded the tick first (it runs the rest), and returns
// the next tick to come.
func (s *Service) catchUp(ctx context.Context, sc *spoolv1.Schedule, now time.Time) (time.Time, error) {
	for range maxTicksPerRound {
		next, ran, err := s.runTick(ctx, sc, now)
		if err != nil || !ran || next.After(now) {
			return next, err
		}
	}
	return now, nil
}

// runTick runs sc's earliest due tick at now, if any, records it on sc,
// and returns the tick after it and whether this call recorded one.
//
// When the earliest due tick is later than missedGrace, the ticks due
// passed while no server ran (every server looks each second): they come
// to one, the latest, which runs or is skipped as sc.missed says.
// Otherwise the earliest runs, on its own: a round a few seconds late
// makes every tick's job.
func (s *Service) runTick(ctx context.Context, sc *spoolv1.Schedule, now time.Time) (time.Time, bool, error) {
	cs, loc, err := parseCron(sc.GetCron(), sc.GetTimezone())
	if err != nil {
		return time.Time{}, false, err
	}
	tick := cs.Next(ticksFrom(sc).In(loc))
	if tick.IsZero() || tick.After(now) {
		return tick, false, nil
	}
	missed := now.Sub(tick) > missedGrace
	if missed {
		tick = latestDue(cs, tick, now.In(loc))
	}
	sc.LastTickAt = timestamppb.New(tick)
	sc.UpdatedAt = timestamppb.New(now)
	skip := ""
	switch {
	case missed && sc.GetMissed() == spoolv1.Missed_MISSED_SKIP:
		skip = "missed"
	case sc.GetOverlap() == spoolv1.Overlap_OVERLAP_SKIP && sc.GetLastJobId() != "":
		last, err := s.store.Get(ctx, sc.GetLastJobId())
		switch {
		case err == nil && !convert.State(last.GetState()).IsFinal():
			skip = "overlap"
		case err != nil && !errors.Is(err, spool.ErrNotFound):
			return time.Time{}, false, err
		}
	}
	if skip == "" {
		m := proto.CloneOf(sc.GetJob())
		m.RequestId = TickRequestID(sc.GetName(), tick)
		e, err := s.enqueueFor(ctx, scheduleCaller, m, sc.GetName())
		switch {
		case refused(err):
			// The tick's request will not do (the queue's webhooks grew
			// past the limit, its request id names another job): trying
			// again each second would hold the schedule at this tick for
			// ever, so the tick is recorded without a job.
			s.log.WarnContext(ctx, "schedule tick made no job: its job was refused", "schedule", sc.GetName(), "tick", tick, "error", err)
		case err != nil:
			return time.Time{}, false, err
		default:
			sc.LastJobId = e.job.GetJobId()
			if e.created {
				s.metrics.jobsEnqueued(ctx, e.job.GetQueue(), e.tally())
				s.log.InfoContext(ctx, "schedule ticked", "schedule", sc.GetName(), "tick", tick, "job_id", e.job.GetJobId())
			}
		}
	} else {
		s.log.InfoContext(ctx, "schedule tick skipped", "schedule", sc.GetName(), "tick", tick, "why", skip)
	}
	// A conflict means another server recorded the tick (or a change was
	// made meanwhile): the job, if any, is the one its request id made,
	// and that server goes on with the ticks after it.
	if err := s.store.UpdateSchedule(ctx, sc); err != nil {
		if errors.Is(err, spool.ErrConflict) || errors.Is(err, spool.ErrNotFound) {
			return cs.Next(tick), false, nil
		}
		return time.Time{}, false, err
	}
	return cs.Next(tick), true, nil
}

// refused reports whether err says a request itself will not do, as
// opposed to the store being away: asking again brings the same answer.
func refused(err error) bool {
	switch apierr.Code(err) {
	case connect.CodeInvalidArgument, connect.CodeAlreadyExists, connect.CodeFailedPrecondition, connect.CodePermissionDenied, connect.CodeNotFound:
		return true
	}
	return false
}

// missedGrace is how late a tick may be run and still count as on time:
// every server looks each second, so a tick later than this passed while
// none ran (or the store was away), and a busy machine's late rounds stay
// well within it.
const missedGrace = 15 * time.Second

// maxTickWalk bounds the ticks walked one by one to the latest due.
const maxTickWalk = 1000

// latestDue is the latest tick of cs not after now, from tick (due):
// walked tick by tick, so a schedule such as @every keeps its own
// sequence, and found by lastTickBefore for a schedule that missed more
// ticks than are worth walking.
func latestDue(cs cron.Schedule, tick, now time.Time) time.Time {
	for range maxTickWalk {
		t := cs.Next(tick)
		if t.IsZero() || t.After(now) {
			return tick
		}
		tick = t
	}
	return lastTickBefore(cs, now)
}

// lastTickBefore finds the latest tick of cs not after now by bisecting
// back in time, for a schedule that missed more ticks than are worth
// walking.
func lastTickBefore(cs cron.Schedule, now time.Time) time.Time {
	step := time.Second
	for {
		from := now.Add(-step)
		if t := cs.Next(from); !t.IsZero() && !t.After(now) {
			// Walk forward from from: few ticks lie within step.
			last := t
			for t = cs.Next(t); !t.IsZero() && !t.After(now); t = cs.Next(t) {
				last = t
			}
			return last
		}
		step *= 2
	}
}
