package jobjson

import (
	"time"

	"github.com/spool-run/spool"
)

// Queue is a queue as the REST API shows it.
type Queue struct {
	Name           string    `json:"name"`
	Paused         bool      `json:"paused"`
	PausedAt       time.Time `json:"paused_at,omitzero"`
	Scheduled      int64     `json:"scheduled"`
	Queued         int64     `json:"queued"`
	Running        int64     `json:"running"`
	Succeeded      int64     `json:"succeeded"`
	Failed         int64     `json:"failed"`
	Cancelled      int64     `json:"cancelled"`
	OldestQueuedAt time.Time `json:"oldest_queued_at,omitzero"`
	Workers        int32     `json:"workers"`
	// MaxRunning is the most of its jobs that run at once (0: no limit).
	MaxRunning int32 `json:"max_running"`
	// EndedPerMinute is there only when the listing asked for it
	// (?ended_per_minute=true): the last 60 minutes, oldest first.
	EndedPerMinute []EndedMinute `json:"ended_per_minute,omitempty"`
}

// EndedMinute is how many of a queue's jobs ended in one minute.
type EndedMinute struct {
	Minute    time.Time `json:"minute"`
	Succeeded int64     `json:"succeeded"`
	Failed    int64     `json:"failed"`
	Cancelled int64     `json:"cancelled"`
}

// QueueList is the body of GET /api/v1/queues.
type QueueList struct {
	Queues []Queue `json:"queues"`
	// WindowSeconds is how far back succeeded, failed and cancelled count.
	WindowSeconds int32 `json:"window_seconds"`
}

// QueueView is queue q as JSON shows it.
func QueueView(q *spool.Queue) Queue {
	v := Queue{Name: q.Name, Paused: q.Paused, PausedAt: utc(q.PausedAt),
		Scheduled: int64(q.Scheduled), MaxRunning: int32(q.MaxRunning), Queued: int64(q.Queued), Running: int64(q.Running), Succeeded: int64(q.Succeeded), Failed: int64(q.Failed),
		Cancelled: int64(q.Cancelled), OldestQueuedAt: utc(q.OldestQueuedAt), Workers: int32(q.Workers)}
	for _, m := range q.EndedPerMinute {
		v.EndedPerMinute = append(v.EndedPerMinute, EndedMinute{Minute: utc(m.Minute),
			Succeeded: int64(m.Succeeded), Failed: int64(m.Failed), Cancelled: int64(m.Cancelled)})
	}
	return v
}

// QueueListView is the queues, and the window their ended jobs are counted
// in, as JSON shows them.
func QueueListView(queues []*spool.Queue, window time.Duration) QueueList {
	out := QueueList{Queues: make([]Queue, 0, len(queues)), WindowSeconds: int32(window / time.Second)}
	for _, q := range queues {
		out.Queues = append(out.Queues, QueueView(q))
	}
	return out
}
