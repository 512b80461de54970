package sqlitestore

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	spoolv1 "github.com/spool-run/spool/gen/spool/v1"
	"github.com/spool-run/spool/internal/store"
	"github.com/spool-run/spool/internal/store/backends/sqlrows"
	"github.com/spool-run/spool/internal/store/storekit"
)

// promoteDue queues the SCHEDULED jobs due at ?1 that wait for no other
// job, from jobs_scheduled (whose predicate is written here as it is
// there), and returns their ids and queues.
var promoteDue = fmt.Sprintf(`UPDATE jobs SET state = %[2]d, run_after = NULL, updated_at = ?1
	WHERE job_id IN (SELECT job_id FROM jobs WHERE state = %[1]d AND run_after <= ?1 AND NOT %[3]s)
	RETURNING job_id, queue`, sqlrows.Scheduled, sqlrows.Queued, sqlrows.WaitsForAfter)

// promoteFollowers queues the jobs of a JSON array of ids (?2) that are
// still SCHEDULED.
var promoteFollowers = fmt.Sprintf(`UPDATE jobs SET state = %[2]d, run_after = NULL, updated_at = ?1
	WHERE job_id IN (SELECT value FROM json_each(?2)) AND state = %[1]d
	RETURNING job_id, queue`, sqlrows.Scheduled, sqlrows.Queued)

// deleteAfterIn removes the job_after rows of a JSON array of job ids.
const deleteAfterIn = `DELETE FROM job_after WHERE job_id IN (SELECT value FROM json_each(?))`

// PromoteScheduled implements store.TimingStore in one write: a statement
// queues the jobs due by their time, a query finds the followers whose
// wait for others is decided, a statement queues those whose parents all
// succeeded and one cancels the others (their outcomes decided from their
// rows, read in one query); and a query reads the next time. When nothing
// is due that is three reads of indexes and of job_after.
func (s *Store) PromoteScheduled(ctx context.Context, now time.Time) (store.Promoted, error) {
	var out store.Promoted
	err := s.write(ctx, func(ctx context.Context, tx *sql.Tx, n *notes) error {
		out = store.Promoted{}
		at := now.UnixMicro()
		k, err := promote(ctx, tx, n, promoteDue, at)
		if err != nil {
			return err
		}
		out.Queued += k
		fs, err := waitingFollowers(ctx, tx, now)
		if err != nil {
			return err
		}
		queue, cancel, outcomes := sqlrows.Split(fs)
		if len(queue) > 0 {
			ids, _ := json.Marshal(queue) // strings always marshal
			if k, err = promote(ctx, tx, n, promoteFollowers, at, string(ids)); err != nil {
				return err
			}
			out.Queued += k
			if _, err := tx.ExecContext(ctx, deleteAfterIn, string(ids)); err != nil {
				return sqliteErr(err, "forget what the queued jobs ran after")
			}
		}
		if len(cancel) > 0 {
			if out.Cancelled, err = cancelFollowers(ctx, tx, n, cancel, outcomes, now); err != nil {
				return err
			}
		}
		var next sql.NullInt64
		err = tx.QueryRowContext(ctx, sqlrows.NextScheduled, at).Scan(&next)
		switch {
		case next.Valid:
			out.Next = time.UnixMicro(next.Int64).UTC()
		case err != nil && !errors.Is(err, sql.ErrNoRows):
			return sqliteErr(err, "read when the next scheduled job is due")
		}
		return nil
	})
	if err != nil {
		return store.Promoted{}, err
	}
	return out, nil
}

// promote runs a statement that queues jobs and returns their ids and
// queues, and notes them.
func promote(ctx context.Context, tx *sql.Tx, n *notes, stmt string, args ...any) (int, error) {
	rows, err := tx.QueryContext(ctx, stmt, args...)
	if err != nil {
		return 0, sqliteErr(err, "queue the scheduled jobs that are due")
	}
	defer rows.Close()
	k, err := sqlrows.ScanPromoted(rows, n.job, n.queue)
	if err != nil {
		return 0, sqliteErr(err, "queue the scheduled jobs that are due")
	}
	return k, nil
}

// waitingFollowers reads the followers whose wait is decided
// (sqlrows.WaitingFollowers).
func waitingFollowers(ctx context.Context, tx *sql.Tx, now time.Time) ([]sqlrows.Follower, error) {
	rows, err := tx.QueryContext(ctx, sqlrows.WaitingFollowers)
	if err != nil {
		return nil, sqliteErr(err, "read the jobs that wait for others")
	}
	defer rows.Close()
	fs, err := sqlrows.Followers(rows, now)
	if err != nil {
		return nil, sqliteErr(err, "read the jobs that wait for others")
	}
	return fs, nil
}

// cancelFollowers cancels the SCHEDULED jobs ids with their outcomes
// (storekit.AfterFailed): their rows are read in one query and written in
// one statement, as a group's completions are (completions.go).
func cancelFollowers(ctx context.Context, tx *sql.Tx, n *notes, ids []string, outcomes map[string]storekit.Outcome, now time.Time) (int, error) {
	list, _ := json.Marshal(ids) // strings always marshal
	rows, err := tx.QueryContext(ctx, selectJobsIn+fmt.Sprintf(` AND state = %d`, sqlrows.Scheduled), string(list))
	if err != nil {
		return 0, sqliteErr(err, "cancel the jobs whose parent failed")
	}
	var settled []sqlrows.Settled
	for rows.Next() {
		r, err := sqlrows.ScanJob(rows)
		if err != nil {
			rows.Close()
			return 0, sqliteErr(err, "cancel the jobs whose parent failed")
		}
		o := outcomes[r.Job.JobId]
		settled = append(settled, sqlrows.Settlement(r, o, false, now))
		n.settled(r.Job, o)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return 0, sqliteErr(err, "cancel the jobs whose parent failed")
	}
	if err := settleAllIn(ctx, tx, settled); err != nil {
		return 0, err
	}
	if _, err := tx.ExecContext(ctx, deleteAfterIn, string(list)); err != nil {
		return 0, sqliteErr(err, "cancel the jobs whose parent failed")
	}
	return len(settled), nil
}

// CreateSchedule implements store.ScheduleStore.
func (s *Store) CreateSchedule(ctx context.Context, sc *spoolv1.Schedule) error {
	var created bool
	err := s.write(ctx, func(ctx context.Context, tx *sql.Tx, _ *notes) error {
		res, err := tx.ExecContext(ctx, sqlrows.InsertSchedule, sc.Name, sqlrows.ScheduleBytes(sc, 1))
		if err != nil {
			return sqliteErr(err, "create schedule %q", sc.Name)
		}
		k, err := res.RowsAffected()
		created = k == 1
		return err
	})
	switch {
	case err != nil:
		return err
	case !created:
		return sqlrows.ScheduleTaken(sc.Name)
	}
	sc.Revision = 1
	return nil
}

// GetSchedule implements store.ScheduleStore.
func (s *Store) GetSchedule(ctx context.Context, name string) (*spoolv1.Schedule, error) {
	sc, err := sqlrows.ScanSchedule(s.r.QueryRowContext(ctx, sqlrows.SelectSchedule, name))
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return nil, store.ScheduleNotFound(name)
	case err != nil:
		return nil, sqliteErr(err, "read schedule %q", name)
	}
	return sc, nil
}

// ListSchedules implements store.ScheduleStore.
func (s *Store) ListSchedules(ctx context.Context) ([]*spoolv1.Schedule, error) {
	var out []*spoolv1.Schedule
	err := s.query(ctx, "list schedules", func(rows sqlrows.Rows) error {
		var err error
		out, err = sqlrows.CollectSchedules(rows)
		return err
	}, sqlrows.SelectAllSched)
	return out, err
}

// UpdateSchedule implements store.ScheduleStore: a conditional UPDATE,
// and when it matches nothing a read, in the same write, says why.
func (s *Store) UpdateSchedule(ctx context.Context, sc *spoolv1.Schedule) error {
	err := s.write(ctx, func(ctx context.Context, tx *sql.Tx, _ *notes) error {
		res, err := tx.ExecContext(ctx, sqlrows.UpdateSchedule, sqlrows.ScheduleBytes(sc, sc.Revision+1), sc.Name, sc.Revision)
		if err != nil {
			return sqliteErr(err, "update schedule %q", sc.Name)
		}
		if k, _ := res.RowsAffected(); k == 1 {
			return nil
		}
		var exists int
		if err := tx.QueryRowContext(ctx, sqlrows.ScheduleExists, sc.Name).Scan(&exists); err != nil {
			return sqliteErr(err, "read schedule %q", sc.Name)
		}
		return sqlrows.UpdateFailed(sc.Name, exists > 0)
	})
	if err != nil {
		return err
	}
	sc.Revision++
	return nil
}

// DeleteSchedule implements store.ScheduleStore.
func (s *Store) DeleteSchedule(ctx context.Context, name string) error {
	return s.write(ctx, func(ctx context.Context, tx *sql.Tx, _ *notes) error {
		res, err := tx.ExecContext(ctx, sqlrows.DeleteSchedule, name)
		if err != nil {
			return sqliteErr(err, "delete schedule %q", name)
		}
		if k, _ := res.RowsAffected(); k == 0 {
			return store.ScheduleNotFound(name)
		}
		return nil
	})
}

// claimDue moves the notify_due of the jobs of a JSON array of ids (?2)
// to ?1 and returns them.
const claimDue = `UPDATE jobs SET notify_due = ?1 WHERE job_id IN (SELECT value FROM json_each(?2)) RETURNING ` + sqlrows.JobCols

// ClaimNotifications implements store.NotifyStore in one write: the due
// jobs are read from jobs_notify_due, oldest due first, and claimed in one
// statement.
func (s *Store) ClaimNotifications(ctx context.Context, now time.Time, hold time.Duration, max int) ([]*spoolv1.Job, error) {
	var out []*spoolv1.Job
	err := s.write(ctx, func(ctx context.Context, tx *sql.Tx, _ *notes) error {
		out = nil
		rows, err := tx.QueryContext(ctx, sqlrows.DueNotifications, now.UnixMicro(), max)
		if err != nil {
			return sqliteErr(err, "find the webhooks due")
		}
		var ids []string
		for rows.Next() {
			var (
				id  string
				due int64
			)
			if err := rows.Scan(&id, &due); err != nil {
				rows.Close()
				return sqliteErr(err, "find the webhooks due")
			}
			ids = append(ids, id)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return sqliteErr(err, "find the webhooks due")
		}
		if len(ids) == 0 {
			return nil
		}
		list, _ := json.Marshal(ids) // strings always marshal
		claimed, err := tx.QueryContext(ctx, claimDue, now.Add(hold).UnixMicro(), string(list))
		if err != nil {
			return sqliteErr(err, "claim the webhooks due")
		}
		defer claimed.Close()
		byID := make(map[string]*spoolv1.Job, len(ids))
		for claimed.Next() {
			r, err := sqlrows.ScanJob(claimed)
			if err != nil {
				return sqliteErr(err, "claim the webhooks due")
			}
			byID[r.Job.JobId] = r.Job
		}
		if err := claimed.Err(); err != nil {
			return sqliteErr(err, "claim the webhooks due")
		}
		for _, id := range ids {
			out = append(out, byID[id])
		}
		return nil
	})
	return out, err
}

// RecordDeliveries implements store.NotifyStore.
func (s *Store) RecordDeliveries(ctx context.Context, jobID string, ds []*spoolv1.Delivery, next time.Time) error {
	return s.write(ctx, func(ctx context.Context, tx *sql.Tx, n *notes) error {
		r, err := getRow(ctx, tx, jobID)
		if err != nil {
			return err
		}
		storekit.AddDeliveries(r.Job, ds, next)
		q, args := sqlrows.WriteDeliveries(r.Job)
		if _, err := tx.ExecContext(ctx, q, args...); err != nil {
			return sqliteErr(err, "record the deliveries of job %s", jobID)
		}
		n.job(jobID)
		return nil
	})
}
