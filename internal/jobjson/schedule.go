package jobjson

import (
	"strings"
	"time"

	"github.com/spool-run/spool"
)

// Schedule is a periodic job as JSON shows it.
type Schedule struct {
	Name     string      `json:"name"`
	Cron     string      `json:"cron"`
	Timezone string      `json:"timezone,omitempty"`
	Job      ScheduleJob `json:"job"`
	// Overlap is "allow" or "skip"; Missed "run_once" or "skip", as the
	// setting schedules.missed spells them.
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

// ScheduleJob is the job a schedule's ticks enqueue, in the fields a job
// is submitted with over REST (POST /api/v1/jobs/batch), so a schedule's
// job reads as the body that would submit it.
type ScheduleJob struct {
	Queue          string            `json:"queue,omitempty"`
	Argv           []string          `json:"argv,omitempty"`
	Script         string            `json:"script,omitempty"`
	Env            map[string]string `json:"env,omitempty"`
	WorkingDir     string            `json:"working_dir,omitempty"`
	TimeoutSeconds float64           `json:"timeout_seconds,omitempty"`
	MaxAttempts    int32             `json:"max_attempts,omitempty"`
	Retries        int32             `json:"retries,omitempty"`
	RepositoryURL  string            `json:"repository_url,omitempty"`
	Ref            string            `json:"ref,omitempty"`
	Stdin          []byte            `json:"stdin,omitempty"`
	PTY            bool              `json:"pty,omitempty"`
	Batching       *Batching         `json:"batching,omitempty"`
	Priority       int32             `json:"priority,omitempty"`
	Notify         []string          `json:"notify,omitempty"`
}

// ScheduleList is a list of schedules, by name.
type ScheduleList struct {
	Schedules []Schedule `json:"schedules"`
}

// ScheduleView is schedule s as JSON shows it.
func ScheduleView(s *spool.Schedule) Schedule {
	j, p := s.Job, paramsView(s.Job.Params)
	return Schedule{Name: s.Name, Cron: s.Cron, Timezone: s.Timezone,
		Job: ScheduleJob{Queue: j.Queue, Argv: p.Argv, Script: p.Script, Env: p.Env, WorkingDir: p.WorkingDir, TimeoutSeconds: p.TimeoutSeconds,
			MaxAttempts: int32(j.MaxAttempts), Retries: int32(j.Retries), RepositoryURL: p.RepositoryURL, Ref: p.Ref, Stdin: p.Stdin,
			PTY: p.PTY, Batching: p.Batching, Priority: int32(j.Priority), Notify: j.Notify},
		Overlap: s.Overlap.String(), Missed: strings.ReplaceAll(s.Missed.String(), "-", "_"), Paused: s.Paused,
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
