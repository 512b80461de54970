package jobjson

import (
	"time"

	"github.com/spool-run/spool"
)

// Schedule is a periodic job as JSON shows it.
type Schedule struct {
	Name     string      `json:"name"`
	Cron     string      `json:"cron"`
	Timezone string      `json:"timezone,omitempty"`
	Job      ScheduleJob `json:"job"`
	// Overlap is "allow" or "skip"; Missed "run-once" or "skip".
	Overlap    string    `json:"overlap"`
	Missed     string    `json:"missed"`
	Paused     bool      `json:"paused"`
	CreatedAt  time.Time `json:"created_at"`
	UpdatedAt  time.Time `json:"updated_at"`
	LastTickAt time.Time `json:"last_tick_at,omitzero"`
	LastJobID  string    `json:"last_job_id,omitempty"`
	NextTickAt time.Time `json:"next_tick_at,omitzero"`
	Revision   int64     `json:"revision"`
}

// ScheduleJob is the job a schedule's ticks enqueue.
type ScheduleJob struct {
	Queue       string    `json:"queue"`
	Params      JobParams `json:"params"`
	Priority    int32     `json:"priority,omitempty"`
	Retries     int32     `json:"retries,omitempty"`
	MaxAttempts int32     `json:"max_attempts,omitempty"`
	Notify      []string  `json:"notify,omitempty"`
}

// ScheduleList is a list of schedules, by name.
type ScheduleList struct {
	Schedules []Schedule `json:"schedules"`
}

// ScheduleView is schedule s as JSON shows it. An unset policy shows the
// server's default, which is what it does.
func ScheduleView(s *spool.Schedule) Schedule {
	overlap, missed := s.Overlap, s.Missed
	if overlap == 0 {
		overlap = spool.OverlapAllow
	}
	if missed == 0 {
		missed = spool.MissedRunOnce
	}
	j := s.Job
	return Schedule{Name: s.Name, Cron: s.Cron, Timezone: s.Timezone,
		Job: ScheduleJob{Queue: j.Queue, Params: paramsView(j.Params), Priority: int32(j.Priority), Retries: int32(j.Retries),
			MaxAttempts: int32(j.MaxAttempts), Notify: j.Notify},
		Overlap: overlap.String(), Missed: missed.String(), Paused: s.Paused,
		CreatedAt: utc(s.CreatedAt), UpdatedAt: utc(s.UpdatedAt), LastTickAt: utc(s.LastTickAt), LastJobID: s.LastJobID,
		NextTickAt: utc(s.NextTickAt), Revision: s.Revision}
}

// ScheduleListView is the schedules as JSON shows them.
func ScheduleListView(ss []*spool.Schedule) ScheduleList {
	out := ScheduleList{Schedules: make([]Schedule, 0, len(ss))}
	for _, s := range ss {
		out.Schedules = append(out.Schedules, ScheduleView(s))
	}
	return out
}
