package store

import (
	"cmp"
	"context"
	"slices"
	"strings"
	"time"

	spoolv1 "github.com/spool-run/spool/gen/spool/v1"
)

// QueueStore keeps what spool knows of its queues beside their jobs:
// whether each is paused, and how many of its jobs are where.
type QueueStore interface {
	// QueueStats returns every queue that has a job, has been paused or
	// has a max_running, by name: its jobs scheduled, queued and running
	// now, its max_running, the jobs that ended at or
	// after since (by final state), its oldest queued job's created_at and
	// whether it is paused. Counting may read every job that is queued,
	// running or ended since; backends keep it to that.
	QueueStats(ctx context.Context, since time.Time) ([]QueueStats, error)
	// SetQueuePaused pauses a queue (recording at) or resumes it. Pausing
	// a queue no job names yet is allowed; pausing a paused queue keeps its
	// first time.
	SetQueuePaused(ctx context.Context, name string, paused bool, at time.Time) error
	// QueuePaused reports whether a queue is paused: the service asks it
	// before every lease, so it must be one cheap read.
	QueuePaused(ctx context.Context, name string) (bool, error)
	// EndedPerMinute counts, for every queue, the jobs that ended (became
	// final, by their ended_at) at or after since, by the minute they
	// ended in and their final state: the queues page's chart. Only
	// minutes with an ended job are listed, by queue then minute. Counting
	// may read every job that ended since; backends keep it to that.
	EndedPerMinute(ctx context.Context, since time.Time) ([]EndedMinute, error)
}

// EndedMinute is how many of a queue's jobs ended in one minute, by final
// state. A cancelled job is counted on its own, neither succeeded nor
// failed.
type EndedMinute struct {
	Queue string
	// Minute is the minute's start, in UTC.
	Minute                       time.Time
	Succeeded, Failed, Cancelled int64
}

// Add counts one job that ended in state s.
func (m *EndedMinute) Add(s spoolv1.JobState, n int64) {
	switch s {
	case spoolv1.JobState_JOB_STATE_SUCCEEDED:
		m.Succeeded += n
	case spoolv1.JobState_JOB_STATE_FAILED:
		m.Failed += n
	case spoolv1.JobState_JOB_STATE_CANCELLED:
		m.Cancelled += n
	}
}

// EndedTally gathers EndedMinutes from jobs or groups of them, in any
// order, for a store that counts outside its database.
type EndedTally struct {
	byKey map[endedKey]*EndedMinute
}

type endedKey struct {
	queue  string
	minute int64
}

// Add counts n jobs of queue that ended at (any time in the minute) in
// state s.
func (t *EndedTally) Add(queue string, at time.Time, s spoolv1.JobState, n int64) {
	if t.byKey == nil {
		t.byKey = map[endedKey]*EndedMinute{}
	}
	k := endedKey{queue, at.Unix() / 60}
	m := t.byKey[k]
	if m == nil {
		m = &EndedMinute{Queue: queue, Minute: time.Unix(k.minute*60, 0).UTC()}
		t.byKey[k] = m
	}
	m.Add(s, n)
}

// Minutes are the minutes counted, by queue (byte order) then minute.
func (t *EndedTally) Minutes() []EndedMinute {
	out := make([]EndedMinute, 0, len(t.byKey))
	for _, m := range t.byKey {
		out = append(out, *m)
	}
	slices.SortFunc(out, func(a, b EndedMinute) int {
		return cmp.Or(strings.Compare(a.Queue, b.Queue), a.Minute.Compare(b.Minute))
	})
	return out
}

// QueueStats is one queue's counts as a store sees them.
type QueueStats struct {
	Name string
	// Paused, and since when (zero while not paused).
	Paused   bool
	PausedAt time.Time
	// Jobs scheduled (waiting for their time or other jobs, and retries
	// waiting out their backoff), queued and running now.
	Scheduled, Queued, Running int64
	// MaxRunning is the queue's limit on running jobs (0: none).
	MaxRunning int32
	// Jobs that ended (became final) at or after the time asked for.
	Succeeded, Failed, Cancelled int64
	// OldestQueued is the created_at of the oldest queued job (zero when
	// none is queued).
	OldestQueued time.Time
}
