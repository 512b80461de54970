package pgstore

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/spool-run/spool"
	spoolv1 "github.com/spool-run/spool/gen/spool/v1"
	"github.com/spool-run/spool/internal/store"
	"github.com/spool-run/spool/internal/store/backends/sqlrows"
	"github.com/spool-run/spool/internal/store/storekit"
)

// Dequeue implements store.JobStore. A long poll is woken by a "queue:"
// notification from any server.
func (s *Store) Dequeue(ctx context.Context, req store.DequeueRequest) ([]store.Lease, error) {
	watch := func(ctx context.Context) <-chan struct{} { return s.hub.Watch(ctx, queueKey(req.Queue)) }
	return storekit.LongPoll(ctx, req.Wait, watch, func() ([]store.Lease, error) {
		return s.lease(ctx, req)
	})
}

// leaseReady leases the oldest ready jobs of a queue in one statement. FOR
// UPDATE SKIP LOCKED passes over rows another server is leasing at the
// same moment, so two dequeues never wait on each other and never both
// take one attempt.
var leaseReady = `WITH ready AS (
		SELECT job_id FROM jobs
		WHERE queue = $1 AND state = $2 AND (run_after IS NULL OR run_after <= $3)
		ORDER BY created_at, job_id LIMIT $4
		FOR UPDATE SKIP LOCKED)
	UPDATE jobs SET state = $5, attempt = attempt + 1, lease_id = gen_random_uuid()::text, lease_expires_at = $6, updated_at = $3
	WHERE job_id IN (SELECT job_id FROM ready)
	RETURNING ` + sqlrows.JobCols

// lease takes up to req.Max ready jobs in one transaction: first the
// queue's expired leases are settled (re-queued, failed or cancelled), then
// the oldest queued jobs are leased.
func (s *Store) lease(ctx context.Context, req store.DequeueRequest) ([]store.Lease, error) {
	var out []store.Lease
	err := s.write(ctx, func(tx pgx.Tx, n *notes) error {
		out = out[:0]
		now := storekit.Now()
		if _, err := expire(ctx, tx, n, now, "queue = $3 AND ", req.Queue); err != nil {
			return err
		}
		rows, err := tx.Query(ctx, leaseReady, req.Queue, sqlrows.Queued, now.UnixMicro(), store.DequeueLimit(req.Max),
			sqlrows.Running, now.Add(req.LeaseDuration).UnixMicro())
		if err != nil {
			return pgErr(err, "lease jobs of queue %q", req.Queue)
		}
		defer rows.Close()
		for rows.Next() {
			r, err := sqlrows.ScanJob(rows)
			if err != nil {
				return pgErr(err, "lease jobs of queue %q", req.Queue)
			}
			n.job(r.Job.JobId)
			out = append(out, r.Lease())
		}
		if err := rows.Err(); err != nil {
			return pgErr(err, "lease jobs of queue %q", req.Queue)
		}
		// RETURNING keeps no order: oldest first, as promised.
		slices.SortFunc(out, func(a, b store.Lease) int {
			return cmp.Or(a.Job.CreatedAt.AsTime().Compare(b.Job.CreatedAt.AsTime()), cmp.Compare(a.JobID, b.JobID))
		})
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// expire settles running jobs whose lease ran out (and match the extra
// condition cond, which ends in AND and numbers its arguments from $3) as
// storekit.Expired decides. Rows another server is settling are skipped:
// it settles them.
func expire(ctx context.Context, tx pgx.Tx, n *notes, now time.Time, cond string, args ...any) (int, error) {
	args = append([]any{sqlrows.Running, now.UnixMicro()}, args...)
	rows, err := tx.Query(ctx, `SELECT `+sqlrows.JobCols+` FROM jobs WHERE `+cond+`state = $1 AND lease_expires_at <= $2
		FOR UPDATE SKIP LOCKED`, args...)
	if err != nil {
		return 0, pgErr(err, "find expired leases")
	}
	found, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (*sqlrows.Row, error) { return sqlrows.ScanJob(row) })
	if err != nil {
		return 0, pgErr(err, "find expired leases")
	}
	for _, r := range found {
		o := storekit.Expired(r.Job, now)
		if err := settle(ctx, tx, r, o, false, now); err != nil {
			return 0, err
		}
		n.settled(r.Job, o)
	}
	return len(found), nil
}

// ExpireLeases implements store.JobStore. Every server's reaper may run it
// at once: each settles the rows the others have not locked.
func (s *Store) ExpireLeases(ctx context.Context) (int, error) {
	var k int
	err := s.write(ctx, func(tx pgx.Tx, n *notes) error {
		var err error
		k, err = expire(ctx, tx, n, storekit.Now(), "")
		return err
	})
	return k, err
}

// current reads and locks the job ref leases and checks the lease is its
// current one.
func current(ctx context.Context, tx pgx.Tx, ref store.LeaseRef) (*sqlrows.Row, error) {
	r, err := getRow(ctx, tx, ref.JobID, true)
	if err != nil {
		return nil, err
	}
	return r, storekit.CheckLease(ref, r.Job.State, r.Job.Attempt, r.LeaseID)
}

// Heartbeat implements store.JobStore: one statement in the common case;
// the read after a refusal only explains it.
func (s *Store) Heartbeat(ctx context.Context, ref store.LeaseRef, d time.Duration) (time.Time, bool, error) {
	expires := storekit.Now().Add(d)
	var cancel bool
	err := s.pool.QueryRow(ctx, `UPDATE jobs SET lease_expires_at = $1 WHERE job_id = $2 AND state = $3 AND attempt = $4 AND lease_id = $5
		RETURNING cancel_requested`, expires.UnixMicro(), ref.JobID, sqlrows.Running, ref.Attempt, ref.LeaseID).Scan(&cancel)
	if notFound(err) {
		r, err := getRow(ctx, s.pool, ref.JobID, false)
		if err != nil {
			return time.Time{}, false, err
		}
		if err := storekit.CheckLease(ref, r.Job.State, r.Job.Attempt, r.LeaseID); err != nil {
			return time.Time{}, false, err
		}
		return time.Time{}, false, fmt.Errorf("postgres: heartbeat of job %s matched no lease", ref.JobID)
	}
	if err != nil {
		return time.Time{}, false, pgErr(err, "heartbeat job %s", ref.JobID)
	}
	return expires, cancel, nil
}

// Complete implements store.JobStore.
func (s *Store) Complete(ctx context.Context, ref store.LeaseRef, res *spoolv1.JobResult) (*spoolv1.Job, error) {
	var out *spoolv1.Job
	err := s.write(ctx, func(tx pgx.Tx, n *notes) error {
		r, err := current(ctx, tx, ref)
		if r != nil && storekit.SameCompletion(ref, r.Job.State, r.Job.Attempt, r.LeaseID) {
			out = r.Job
			return nil
		}
		if err != nil {
			return err
		}
		now := storekit.Now()
		o := storekit.Completed(r.Job, res, ref.Attempt, now)
		// A final job keeps its lease handle, so a repeat is recognised; a
		// job queued for a retry gets a new lease with its next attempt.
		if err := settle(ctx, tx, r, o, spool.IsFinal(o.State), now); err != nil {
			return err
		}
		n.settled(r.Job, o)
		out = r.Job
		return nil
	})
	return out, err
}

// Release implements store.JobStore.
func (s *Store) Release(ctx context.Context, ref store.LeaseRef, countAttempt bool, reason string) (*spoolv1.Job, error) {
	var out *spoolv1.Job
	err := s.write(ctx, func(tx pgx.Tx, n *notes) error {
		r, err := current(ctx, tx, ref)
		if err != nil {
			return err
		}
		now := storekit.Now()
		o := storekit.Released(r.Job, countAttempt, reason, now)
		if err := settle(ctx, tx, r, o, false, now); err != nil {
			return err
		}
		n.settled(r.Job, o)
		out = r.Job
		return nil
	})
	return out, err
}

// GraceLeases implements store.LeaseGracer. Leases here run on the servers'
// clocks: when every server was down, no worker could heartbeat, so the
// first server back gives the running jobs time for their workers to
// reconnect. While another server runs, workers could reach it and its
// reaper kept time: then nothing is extended.
func (s *Store) GraceLeases(ctx context.Context, until time.Time) (int, error) {
	if others, err := s.othersRunning(ctx); err != nil || others {
		return 0, err
	}
	var k int64
	err := s.write(ctx, func(tx pgx.Tx, n *notes) error {
		tag, err := tx.Exec(ctx, `UPDATE jobs SET lease_expires_at = $1 WHERE state = $2 AND lease_expires_at < $1`, until.UnixMicro(), sqlrows.Running)
		if err != nil {
			return pgErr(err, "grace leases")
		}
		k = tag.RowsAffected()
		return nil
	})
	return int(k), err
}
