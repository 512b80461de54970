package jobjson

import (
	"time"

	spoolv1 "github.com/spool-run/spool/gen/spool/v1"
)

// Queue is a queue as the REST API shows it.
type Queue struct {
	Name           string    `json:"name"`
	Paused         bool      `json:"paused"`
	PausedAt       time.Time `json:"paused_at,omitzero"`
	Queued         int64     `json:"queued"`
	Running        int64     `json:"running"`
	Succeeded      int64     `json:"succeeded"`
	Failed         int64     `json:"failed"`
	Cancelled      int64     `json:"cancelled"`
	OldestQueuedAt time.Time `json:"oldest_queued_at,omitzero"`
	Workers        int32     `json:"workers"`
}

// QueueList is the body of GET /api/v1/queues.
type QueueList struct {
	Queues []Queue `json:"queues"`
	// WindowSeconds is how far back succeeded, failed and cancelled count.
	WindowSeconds int32 `json:"window_seconds"`
}

// QueueView is queue q as JSON shows it.
func QueueView(q *spoolv1.Queue) Queue {
	return Queue{Name: q.GetName(), Paused: q.GetPaused(), PausedAt: timeOf(q.GetPausedAt()),
		Queued: q.GetQueued(), Running: q.GetRunning(), Succeeded: q.GetSucceeded(), Failed: q.GetFailed(),
		Cancelled: q.GetCancelled(), OldestQueuedAt: timeOf(q.GetOldestQueuedAt()), Workers: q.GetWorkers()}
}

// QueueListView is a ListQueues answer as JSON shows it.
func QueueListView(r *spoolv1.ListQueuesResponse) QueueList {
	out := QueueList{Queues: make([]Queue, 0, len(r.GetQueues())), WindowSeconds: r.GetWindowSeconds()}
	for _, q := range r.GetQueues() {
		out.Queues = append(out.Queues, QueueView(q))
	}
	return out
}
