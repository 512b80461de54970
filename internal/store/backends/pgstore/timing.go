package pgstore

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	spoolv1 "github.com/spool-run/spool/gen/spool/v1"
	"github.com/spool-run/spool/internal/store"
	"github.com/spool-run/spool/internal/store/backends/sqlrows"
	"github.com/spool-run/spool/internal/store/storekit"
)

// promoteChunk bounds the jobs one statement queues: a backlog of jobs
// due together (a schedule's burst, the jobs held while every server was
// down) is queued in transactions of this many, none of them long.
const promoteChunk = 5000

var (
	// promoteDue queues up to $2 SCHEDULED jobs due at $1 that wait for
	// no other job, from jobs_scheduled. Rows another server is promoting
	// are skipped: it queues them.
	promoteDue = fmt.Sprintf(`WITH due AS (
		SELECT job_id FROM jobs WHERE state = %[1]d AND run_after <= $1 AND NOT %[3]s
		ORDER BY run_after LIMIT $2
		FOR UPDATE OF jobs SKIP LOCKED)
	UPDATE jobs SET state = %[2]d, run_after = NULL, updated_at = $1
	WHERE job_id IN (SELECT job_id FROM due)
	RETURNING job_id, queue`, sqlrows.Scheduled, sqlrows.Queued, sqlrows.WaitsForAfter)
	// promoteFollowers queues the jobs $1 (whose wait for others is over)
	// that are still SCHEDULED, and removes their job_after rows.
	promoteFollowers = fmt.Sprintf(`WITH f AS (
		SELECT job_id FROM jobs WHERE job_id = ANY($1) AND state = %[1]d FOR UPDATE SKIP LOCKED),
	up AS (
		UPDATE jobs SET state = %[2]d, run_after = NULL, updated_at = $2 WHERE job_id IN (SELECT job_id FROM f)
		RETURNING job_id, queue),
	gone AS (DELETE FROM job_after WHERE job_id IN (SELECT job_id FROM up))
	SELECT job_id, queue FROM up`, sqlrows.Scheduled, sqlrows.Queued)
	// lockScheduled reads and locks the jobs $1 that are still SCHEDULED.
	lockScheduled = fmt.Sprintf(`SELECT %s FROM jobs WHERE job_id = ANY($1) AND state = %d FOR UPDATE SKIP LOCKED`,
		sqlrows.JobCols, sqlrows.Scheduled)
	deleteAfterAll = `DELETE FROM job_after WHERE job_id = ANY($1)`
	nextScheduled  = sqlrows.Dollar(sqlrows.NextScheduled)
	followerRows   = sqlrows.WaitingFollowers
	selectSchedule = sqlrows.Dollar(sqlrows.SelectSchedule)
	insertSchedule = sqlrows.Dollar(sqlrows.InsertSchedule)
	updateSchedule = sqlrows.Dollar(sqlrows.UpdateSchedule)
	deleteSchedule = sqlrows.Dollar(sqlrows.DeleteSchedule)
	scheduleExists = sqlrows.Dollar(sqlrows.ScheduleExists)
)

// PromoteScheduled implements store.TimingStore in a few statements: the
// jobs due by their time, a chunk at a time, each chunk one statement
// that also tells their queues; then, in one round trip, the followers
// whose wait for others is decided and the next time; then those
// followers queued in one statement and cancelled in one transaction.
// When nothing is due that is two round trips, reading jobs_scheduled and
// job_after.
func (s *Store) PromoteScheduled(ctx context.Context, now time.Time) (store.Promoted, error) {
	var out store.Promoted
	at := now.UnixMicro()
	for {
		k, err := s.promote(ctx, promoteDue, at, promoteChunk)
		if err != nil {
			return store.Promoted{}, err
		}
		out.Queued += k
		if k < promoteChunk {
			break
		}
	}
	followers, next, err := s.waiting(ctx, now)
	if err != nil {
		return store.Promoted{}, err
	}
	out.Next = next
	queue, cancel, outcomes := sqlrows.Split(followers)
	if len(queue) > 0 {
		k, err := s.promote(ctx, promoteFollowers, queue, at)
		if err != nil {
			return store.Promoted{}, err
		}
		out.Queued += k
	}
	if len(cancel) > 0 {
		k, err := s.cancelFollowers(ctx, cancel, outcomes, now)
		if err != nil {
			return store.Promoted{}, err
		}
		out.Cancelled += k
	}
	return out, nil
}

// waiting reads the followers whose wait is decided
// (sqlrows.WaitingFollowers) and the next time a job waits for
// (sqlrows.NextScheduled), in one round trip.
func (s *Store) waiting(ctx context.Context, now time.Time) ([]sqlrows.Follower, time.Time, error) {
	b := &pgx.Batch{}
	b.Queue(followerRows)
	b.Queue(nextScheduled, now.UnixMicro())
	br := s.pool.SendBatch(ctx, b)
	defer br.Close()
	rows, err := br.Query()
	if err != nil {
		return nil, time.Time{}, pgErr(err, "read the jobs that wait for others")
	}
	fs, err := sqlrows.Followers(rows, now)
	rows.Close()
	if err != nil {
		return nil, time.Time{}, pgErr(err, "read the jobs that wait for others")
	}
	var next time.Time
	var us int64
	switch err := br.QueryRow().Scan(&us); {
	case err == nil:
		next = time.UnixMicro(us).UTC()
	case !notFound(err):
		return nil, time.Time{}, pgErr(err, "read when the next scheduled job is due")
	}
	if err := br.Close(); err != nil {
		return nil, time.Time{}, pgErr(err, "read the jobs that wait for others")
	}
	return fs, next, nil
}

// cancelFollowers cancels the jobs ids, still SCHEDULED, with their
// outcomes (storekit.AfterFailed), in one transaction: each row's
// settlement is decided from the row, locked, and all are written by one
// statement.
func (s *Store) cancelFollowers(ctx context.Context, ids []string, outcomes map[string]storekit.Outcome, now time.Time) (int, error) {
	k := 0
	err := s.write(ctx, func(tx pgx.Tx, n *notes) error {
		rows, err := tx.Query(ctx, lockScheduled, ids)
		if err != nil {
			return pgErr(err, "cancel the jobs whose parent failed")
		}
		found, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (*sqlrows.Row, error) { return sqlrows.ScanJob(row) })
		if err != nil {
			return pgErr(err, "cancel the jobs whose parent failed")
		}
		if k = len(found); k == 0 {
			return nil
		}
		settled := make([]sqlrows.Settled, len(found))
		cancelled := make([]string, len(found))
		for i, r := range found {
			o := outcomes[r.Job.JobId]
			settled[i] = sqlrows.Settlement(r, o, false, now)
			cancelled[i] = r.Job.JobId
			n.settled(r.Job, o)
		}
		b := &pgx.Batch{}
		b.Queue(settleAll, settleArgs(settled)...)
		b.Queue(deleteAfterAll, cancelled)
		if err := tx.SendBatch(ctx, b).Close(); err != nil {
			return pgErr(err, "cancel the jobs whose parent failed")
		}
		return nil
	})
	return k, err
}

// promote runs a statement that queues jobs and returns their ids and
// queues, and notes them.
func (s *Store) promote(ctx context.Context, stmt string, args ...any) (int, error) {
	k := 0
	err := s.writeOne(func(q querier, n *notes) error {
		k = 0
		rows, err := q.Query(ctx, stmt, args...)
		if err != nil {
			return pgErr(err, "queue the scheduled jobs that are due")
		}
		defer rows.Close()
		if k, err = sqlrows.ScanPromoted(rows, n.job, n.queue); err != nil {
			return pgErr(err, "queue the scheduled jobs that are due")
		}
		return nil
	})
	return k, err
}

// CreateSchedule implements store.ScheduleStore.
func (s *Store) CreateSchedule(ctx context.Context, sc *spoolv1.Schedule) error {
	tag, err := s.pool.Exec(ctx, insertSchedule, sc.Name, sqlrows.ScheduleBytes(sc, 1))
	if err != nil {
		return pgErr(err, "create schedule %q", sc.Name)
	}
	if tag.RowsAffected() == 0 {
		return sqlrows.ScheduleTaken(sc.Name)
	}
	sc.Revision = 1
	return nil
}

// GetSchedule implements store.ScheduleStore.
func (s *Store) GetSchedule(ctx context.Context, name string) (*spoolv1.Schedule, error) {
	sc, err := sqlrows.ScanSchedule(s.pool.QueryRow(ctx, selectSchedule, name))
	switch {
	case notFound(err):
		return nil, store.ScheduleNotFound(name)
	case err != nil:
		return nil, pgErr(err, "read schedule %q", name)
	}
	return sc, nil
}

// ListSchedules implements store.ScheduleStore.
func (s *Store) ListSchedules(ctx context.Context) ([]*spoolv1.Schedule, error) {
	rows, err := s.pool.Query(ctx, sqlrows.SelectAllSched)
	if err != nil {
		return nil, pgErr(err, "list schedules")
	}
	defer rows.Close()
	out, err := sqlrows.CollectSchedules(rows)
	if err != nil {
		return nil, pgErr(err, "list schedules")
	}
	return out, nil
}

// UpdateSchedule implements store.ScheduleStore: one conditional UPDATE;
// when it matches nothing, a read says why.
func (s *Store) UpdateSchedule(ctx context.Context, sc *spoolv1.Schedule) error {
	tag, err := s.pool.Exec(ctx, updateSchedule, sqlrows.ScheduleBytes(sc, sc.Revision+1), sc.Name, sc.Revision)
	if err != nil {
		return pgErr(err, "update schedule %q", sc.Name)
	}
	if tag.RowsAffected() == 0 {
		var k int
		if err := s.pool.QueryRow(ctx, scheduleExists, sc.Name).Scan(&k); err != nil {
			return pgErr(err, "read schedule %q", sc.Name)
		}
		return sqlrows.UpdateFailed(sc.Name, k > 0)
	}
	sc.Revision++
	return nil
}

// DeleteSchedule implements store.ScheduleStore.
func (s *Store) DeleteSchedule(ctx context.Context, name string) error {
	tag, err := s.pool.Exec(ctx, deleteSchedule, name)
	if err != nil {
		return pgErr(err, "delete schedule %q", name)
	}
	if tag.RowsAffected() == 0 {
		return store.ScheduleNotFound(name)
	}
	return nil
}

// claimNotifications moves the notify_due of up to $2 jobs due at $1 to
// $3, oldest due first, from jobs_notify_due, and returns them in that
// order. Rows another server is claiming are skipped: they are its.
var claimNotifications = `WITH due AS (
		SELECT job_id, notify_due AS was FROM jobs WHERE notify_due IS NOT NULL AND notify_due <= $1
		ORDER BY notify_due LIMIT $2
		FOR UPDATE SKIP LOCKED),
	claimed AS (
		UPDATE jobs SET notify_due = $3 WHERE job_id IN (SELECT job_id FROM due)
		RETURNING ` + sqlrows.JobCols + `)
	SELECT claimed.* FROM claimed JOIN due USING (job_id) ORDER BY due.was, job_id`

// ClaimNotifications implements store.NotifyStore in one statement.
func (s *Store) ClaimNotifications(ctx context.Context, now time.Time, hold time.Duration, max int) ([]*spoolv1.Job, error) {
	var out []*spoolv1.Job
	err := s.writeOne(func(q querier, _ *notes) error {
		rows, err := q.Query(ctx, claimNotifications, now.UnixMicro(), max, now.Add(hold).UnixMicro())
		if err != nil {
			return pgErr(err, "claim the webhooks due")
		}
		found, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (*sqlrows.Row, error) { return sqlrows.ScanJob(row) })
		if err != nil {
			return pgErr(err, "claim the webhooks due")
		}
		out = make([]*spoolv1.Job, len(found))
		for i, r := range found {
			out[i] = r.Job
		}
		return nil
	})
	return out, err
}

// RecordDeliveries implements store.NotifyStore: a row write, grouped with
// the others (groupcommit.go).
func (s *Store) RecordDeliveries(ctx context.Context, jobID string, ds []*spoolv1.Delivery, next time.Time) error {
	return s.writeRow(ctx, jobID, 0, func(_ context.Context, _ querier, r *sqlrows.Row, w *rowWrites, n *notes) error {
		storekit.AddDeliveries(r.Job, ds, next)
		q, args := sqlrows.WriteDeliveries(r.Job)
		w.Queue(sqlrows.Dollar(q), args...)
		n.job(jobID)
		return nil
	})
}
