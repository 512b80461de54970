package convert

import (
	"github.com/spool-run/spool"
	spoolv1 "github.com/spool-run/spool/gen/spool/v1"
)

// Overlap is the overlap policy o.
func Overlap(o spoolv1.Overlap) spool.Overlap { return spool.Overlap(o) }

// OverlapProto is the wire's overlap policy o.
func OverlapProto(o spool.Overlap) spoolv1.Overlap { return spoolv1.Overlap(o) }

// Missed is the policy for missed ticks m.
func Missed(m spoolv1.Missed) spool.Missed { return spool.Missed(m) }

// MissedProto is the wire's policy for missed ticks m.
func MissedProto(m spool.Missed) spoolv1.Missed { return spoolv1.Missed(m) }

// Schedule is the schedule s (nil for nil). Of its job template, only what
// a tick uses is kept.
func Schedule(s *spoolv1.Schedule) *spool.Schedule {
	if s == nil {
		return nil
	}
	j := s.GetJob()
	return &spool.Schedule{
		Name: s.GetName(), Cron: s.GetCron(), Timezone: s.GetTimezone(),
		Job: spool.ScheduleJob{Queue: j.GetQueue(), Params: Params(j.GetParams()), Priority: int(j.GetPriority()),
			Retries: int(j.GetRetries()), MaxAttempts: int(j.GetMaxAttempts()), Notify: j.GetNotify()},
		Overlap: Overlap(s.GetOverlap()), Missed: Missed(s.GetMissed()), Paused: s.GetPaused(),
		CreatedAt: timeOf(s.GetCreatedAt()), UpdatedAt: timeOf(s.GetUpdatedAt()),
		LastTickAt: timeOf(s.GetLastTickAt()), LastJobID: s.GetLastJobId(), NextTickAt: timeOf(s.GetNextTickAt()),
		Revision: s.GetRevision(),
	}
}

// Schedules are the schedules ss.
func Schedules(ss []*spoolv1.Schedule) []*spool.Schedule {
	out := make([]*spool.Schedule, len(ss))
	for i, s := range ss {
		out[i] = Schedule(s)
	}
	return out
}

// ScheduleProto is the wire's schedule s (nil for nil).
func ScheduleProto(s *spool.Schedule) *spoolv1.Schedule {
	if s == nil {
		return nil
	}
	j := s.Job
	return &spoolv1.Schedule{
		Name: s.Name, Cron: s.Cron, Timezone: s.Timezone,
		Job: &spoolv1.EnqueueJobRequest{Queue: j.Queue, Params: paramsProto(j.Params), Priority: int32(j.Priority),
			Retries: int32(j.Retries), MaxAttempts: int32(j.MaxAttempts), Notify: j.Notify},
		Overlap: OverlapProto(s.Overlap), Missed: MissedProto(s.Missed), Paused: s.Paused,
		CreatedAt: stamp(s.CreatedAt), UpdatedAt: stamp(s.UpdatedAt),
		LastTickAt: stamp(s.LastTickAt), LastJobId: s.LastJobID, NextTickAt: stamp(s.NextTickAt),
		Revision: s.Revision,
	}
}
