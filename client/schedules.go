package client

import (
	"context"
	"errors"

	"connectrpc.com/connect"

	"github.com/spool-run/spool"
	spoolv1 "github.com/spool-run/spool/gen/spool/v1"
	"github.com/spool-run/spool/internal/apierr"
	"github.com/spool-run/spool/internal/convert"
)

// ScheduleParams describes a periodic job to create.
type ScheduleParams struct {
	// Name is letters, digits, '-', '_' and '.', at most 80 characters.
	Name string
	// Cron is a standard cron expression (minute hour day-of-month month
	// day-of-week: "30 2 * * 1-5"), a descriptor (@hourly, @daily) or
	// "@every 10m"; a sixth, leading field gives seconds.
	Cron string
	// Timezone is the IANA time zone Cron is read in ("": UTC).
	Timezone string
	// Job is what each tick enqueues. Of SubmitParams, what a tick cannot
	// use (RunAt, RunIn, After, RequestID, Secrets, RejectReason) is
	// refused.
	Job SubmitParams
	// Overlap says what a tick does while the job of an earlier tick has
	// not ended (0: spool.OverlapAllow).
	Overlap spool.Overlap
	// Missed says what the schedule does with ticks that passed while no
	// server ran (0: the server's default, spool.MissedRunOnce unless
	// configured otherwise).
	Missed spool.Missed
}

// CreateSchedule creates a schedule; from then on every tick enqueues one
// job, once, whichever server sees it first. Creating one needs a key
// that may submit to its job's queue; a name in use is
// spool.ErrAlreadyExists.
func (c *Client) CreateSchedule(ctx context.Context, p ScheduleParams) (*spool.Schedule, error) {
	j := p.Job
	var unused []error
	for _, f := range []struct {
		name string
		set  bool
	}{{"RunAt", !j.RunAt.IsZero()}, {"RunIn", j.RunIn != 0}, {"After", len(j.After) > 0}, {"RequestID", j.RequestID != ""},
		{"Secrets", len(j.Secrets) > 0}, {"RejectReason", j.RejectReason != ""}} {
		if f.set {
			unused = append(unused, apierr.Invalid("a schedule's job cannot have %s: each tick makes a new job, at the tick", f.name))
		}
	}
	if err := errors.Join(unused...); err != nil {
		return nil, err
	}
	job, err := j.request()
	if err != nil {
		return nil, err
	}
	resp, err := c.sched.CreateSchedule(ctx, connect.NewRequest(&spoolv1.CreateScheduleRequest{Schedule: &spoolv1.Schedule{
		Name: p.Name, Cron: p.Cron, Timezone: p.Timezone, Job: job,
		Overlap: convert.OverlapProto(p.Overlap), Missed: convert.MissedProto(p.Missed),
	}}))
	if err != nil {
		return nil, wrap(err)
	}
	return convert.Schedule(resp.Msg.GetSchedule()), nil
}

// Schedule returns one schedule, with its next tick. An unknown name is
// spool.ErrNotFound.
func (c *Client) Schedule(ctx context.Context, name string) (*spool.Schedule, error) {
	resp, err := c.sched.GetSchedule(ctx, connect.NewRequest(&spoolv1.GetScheduleRequest{Name: name}))
	if err != nil {
		return nil, wrap(err)
	}
	return convert.Schedule(resp.Msg.GetSchedule()), nil
}

// Schedules returns the schedules whose jobs the caller may read, by name.
func (c *Client) Schedules(ctx context.Context) ([]*spool.Schedule, error) {
	resp, err := c.sched.ListSchedules(ctx, connect.NewRequest(&spoolv1.ListSchedulesRequest{}))
	if err != nil {
		return nil, wrap(err)
	}
	return convert.Schedules(resp.Msg.GetSchedules()), nil
}

// PauseSchedule stops a schedule's ticks until ResumeSchedule; the ticks
// in between are not run.
func (c *Client) PauseSchedule(ctx context.Context, name string) (*spool.Schedule, error) {
	resp, err := c.sched.PauseSchedule(ctx, connect.NewRequest(&spoolv1.PauseScheduleRequest{Name: name}))
	if err != nil {
		return nil, wrap(err)
	}
	return convert.Schedule(resp.Msg.GetSchedule()), nil
}

// ResumeSchedule starts a paused schedule's ticks again, from now.
func (c *Client) ResumeSchedule(ctx context.Context, name string) (*spool.Schedule, error) {
	resp, err := c.sched.ResumeSchedule(ctx, connect.NewRequest(&spoolv1.ResumeScheduleRequest{Name: name}))
	if err != nil {
		return nil, wrap(err)
	}
	return convert.Schedule(resp.Msg.GetSchedule()), nil
}

// DeleteSchedule removes a schedule; the jobs it made stay.
func (c *Client) DeleteSchedule(ctx context.Context, name string) error {
	_, err := c.sched.DeleteSchedule(ctx, connect.NewRequest(&spoolv1.DeleteScheduleRequest{Name: name}))
	return wrap(err)
}
