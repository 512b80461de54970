package sqlrows

import (
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/jackc/pgx/v5/pgtype"

	"github.com/spool-run/spool"
	spoolv1 "github.com/spool-run/spool/gen/spool/v1"
	"github.com/spool-run/spool/internal/apierr"
	"github.com/spool-run/spool/internal/store"
)

// How the SQL stores keep their queues: a queue is a name the jobs carry,
// with no row of its own until it is paused or given a limit on running
// jobs; then it is a row of queues (name, paused_at, max_running), either
// NULL when unset. A row with neither set stays (it costs nothing) and is
// not listed.

// FinalStates are the final states as stored, written out in the
// statements here and in the predicate of the partial index jobs_ended
// (WHERE state IN (3, 4, 5)) alike: a database uses a partial index only
// for a query whose terms imply its predicate, which SQLite sees only
// when a term is the predicate itself.
var FinalStates = fmt.Sprintf("%d, %d, %d", spoolv1.JobState_JOB_STATE_SUCCEEDED, spoolv1.JobState_JOB_STATE_FAILED, spoolv1.JobState_JOB_STATE_CANCELLED)

// QueueCounts counts each queue's jobs by state: all of those scheduled,
// queued or running, and those that ended (ended_at) at or after a time (argument:
// since, Unix micros), with the oldest created_at of each group. Each arm
// of the OR is a search of an index leading with state: the jobs waiting
// or running through one of those that index all jobs, the ended ones
// through jobs_ended from since on, so the jobs that ended before it,
// which soon are nearly all, cost nothing.
var QueueCounts = fmt.Sprintf(`SELECT queue, state, count(*), min(created_at) FROM jobs
	WHERE state IN (%d, %d, %d) OR (state IN (%s) AND ended_at >= ?)
	GROUP BY queue, state`, Scheduled, Queued, Running, FinalStates)

// EndedPerMinute counts the jobs that ended (ended_at) at or after a time
// (argument: since, Unix micros) by queue, final state and minute of their
// end (the minute's number since the epoch): a search of jobs_ended (state,
// ended_at) from since on for each final state, as QueueCounts's ended arm.
var EndedPerMinute = fmt.Sprintf(`SELECT queue, state, ended_at / 60000000, count(*) FROM jobs
	WHERE state IN (%s) AND ended_at >= ?
	GROUP BY 1, 2, 3`, FinalStates)

// AddEnded adds rows of EndedPerMinute to t. The caller closes rows.
func AddEnded(t *store.EndedTally, rows Rows) error {
	for rows.Next() {
		var (
			name          string
			state         int32
			minute, count int64
		)
		if err := rows.Scan(&name, &state, &minute, &count); err != nil {
			return err
		}
		t.Add(name, time.Unix(minute*60, 0), spoolv1.JobState(state), count)
	}
	return rows.Err()
}

// PausedQueues reads the queues' settings: since when each is paused (NULL:
// it is not) and its limit on running jobs (NULL: none).
const PausedQueues = `SELECT name, paused_at, max_running FROM queues`

// SetQueuePaused is the statement that pauses a queue at at, keeping the
// time of a pause already in place, or resumes it.
func SetQueuePaused(name string, paused bool, at time.Time) (string, []any) {
	if !paused {
		return `UPDATE queues SET paused_at = NULL WHERE name = ?`, []any{name}
	}
	return `INSERT INTO queues (name, paused_at) VALUES (?, ?)
		ON CONFLICT (name) DO UPDATE SET paused_at = COALESCE(queues.paused_at, excluded.paused_at)`, []any{name, Micros(at)}
}

// SetQueueMaxRunning is the statement that sets a queue's limit on running
// jobs (0: none, stored as NULL).
func SetQueueMaxRunning(name string, n int32) (string, []any) {
	var v any
	if n > 0 {
		v = n
	}
	return `INSERT INTO queues (name, max_running) VALUES (?, ?)
		ON CONFLICT (name) DO UPDATE SET max_running = excluded.max_running`, []any{name, v}
}

// CheckMaxRunning refuses a limit out of range.
func CheckMaxRunning(name string, n int32) error {
	if n < 0 || n > store.MaxQueueRunning {
		return apierr.Errorf(spool.ErrInvalidArgument, "max_running of queue %q must be 0 (no limit) to %d, got %d", name, store.MaxQueueRunning, n)
	}
	return nil
}

// QueueTally gathers QueueStats from the rows of QueueCounts and
// PausedQueues, read in either order.
type QueueTally struct {
	byName map[string]*store.QueueStats
}

func (t *QueueTally) queue(name string) *store.QueueStats {
	if t.byName == nil {
		t.byName = map[string]*store.QueueStats{}
	}
	q := t.byName[name]
	if q == nil {
		q = &store.QueueStats{Name: name}
		t.byName[name] = q
	}
	return q
}

// AddCounts adds rows of QueueCounts. The caller closes rows.
func (t *QueueTally) AddCounts(rows Rows) error {
	for rows.Next() {
		var (
			name          string
			state         int32
			count, oldest int64
		)
		if err := rows.Scan(&name, &state, &count, &oldest); err != nil {
			return err
		}
		q := t.queue(name)
		switch spoolv1.JobState(state) {
		case spoolv1.JobState_JOB_STATE_SCHEDULED:
			q.Scheduled = count
		case spoolv1.JobState_JOB_STATE_QUEUED:
			q.Queued, q.OldestQueued = count, time.UnixMicro(oldest).UTC()
		case spoolv1.JobState_JOB_STATE_RUNNING:
			q.Running = count
		case spoolv1.JobState_JOB_STATE_SUCCEEDED:
			q.Succeeded = count
		case spoolv1.JobState_JOB_STATE_FAILED:
			q.Failed = count
		case spoolv1.JobState_JOB_STATE_CANCELLED:
			q.Cancelled = count
		}
	}
	return rows.Err()
}

// AddPaused adds rows of PausedQueues. The caller closes rows.
func (t *QueueTally) AddPaused(rows Rows) error {
	for rows.Next() {
		var (
			name    string
			at, max pgtype.Int8
		)
		if err := rows.Scan(&name, &at, &max); err != nil {
			return err
		}
		if !at.Valid && !max.Valid {
			continue
		}
		q := t.queue(name)
		if at.Valid {
			q.Paused, q.PausedAt = true, time.UnixMicro(at.Int64).UTC()
		}
		if max.Valid {
			q.MaxRunning = int32(max.Int64)
		}
	}
	return rows.Err()
}

// Stats are the queues gathered, by name. They are sorted here, not by
// the database, whose order of text follows its collation: every store
// then lists queues in the same (byte) order.
func (t *QueueTally) Stats() []store.QueueStats {
	out := make([]store.QueueStats, 0, len(t.byName))
	for _, name := range slices.Sorted(maps.Keys(t.byName)) {
		out = append(out, *t.byName[name])
	}
	return out
}
