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
	return s.polls.Dequeue(ctx, req, func() ([]store.Lease, error) {
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
	UPDATE jobs SET state = $5, attempt = attempt + 1, lease_id = gen_random_uuid()::text, lease_expires_at = $6, updated_at = $3, started_at = $3
	WHERE job_id IN (SELECT job_id FROM ready)
	RETURNING ` + sqlrows.JobCols

// anyExpired says whether a running job of the queue has a lease that ran
// out.
const anyExpired = `SELECT EXISTS (SELECT 1 FROM jobs WHERE state = $1 AND lease_expires_at <= $2 AND queue = $3)`

// lease takes up to req.Max ready jobs, the oldest first. One round trip
// leases the queued jobs and asks whether any of the queue's leases ran
// out; only then are those settled (queued again, failed or cancelled) and
// the queue asked once more, so a busy queue pays nothing for expiry.
func (s *Store) lease(ctx context.Context, req store.DequeueRequest) ([]store.Lease, error) {
	out, expired, err := s.leaseQueued(ctx, req)
	if err != nil || !expired || len(out) >= store.DequeueLimit(req.Max) {
		return out, err
	}
	settled, err := s.expireQueue(ctx, req.Queue)
	if err != nil || settled == 0 {
		// The leases taken stand; the reaper settles what was not.
		return out, nil
	}
	req.Max = store.DequeueLimit(req.Max) - len(out)
	more, _, err := s.leaseQueued(ctx, req)
	if err != nil {
		return out, nil
	}
	return append(out, more...), nil
}

// leaseQueued leases up to req.Max queued jobs in one statement, and says
// whether the queue has expired leases.
func (s *Store) leaseQueued(ctx context.Context, req store.DequeueRequest) ([]store.Lease, bool, error) {
	var (
		out     []store.Lease
		expired bool
	)
	err := s.writeOne(func(q querier, n *notes) error {
		out = out[:0]
		now := storekit.Now()
		b := &pgx.Batch{}
		b.Queue(leaseReady, req.Queue, sqlrows.Queued, now.UnixMicro(), store.DequeueLimit(req.Max),
			sqlrows.Running, now.Add(req.LeaseDuration).UnixMicro())
		b.Queue(anyExpired, sqlrows.Running, now.UnixMicro(), req.Queue)
		br := q.SendBatch(ctx, b)
		defer br.Close()
		rows, err := br.Query()
		if err != nil {
			return pgErr(err, "lease jobs of queue %q", req.Queue)
		}
		for rows.Next() {
			r, err := sqlrows.ScanJob(rows)
			if err != nil {
				rows.Close()
				return pgErr(err, "lease jobs of queue %q", req.Queue)
			}
			n.job(r.Job.JobId)
			out = append(out, r.Lease())
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return pgErr(err, "lease jobs of queue %q", req.Queue)
		}
		if err := br.QueryRow().Scan(&expired); err != nil {
			return pgErr(err, "look for expired leases of queue %q", req.Queue)
		}
		if err := br.Close(); err != nil {
			return pgErr(err, "lease jobs of queue %q", req.Queue)
		}
		// RETURNING keeps no order: oldest first, as promised.
		slices.SortFunc(out, func(a, b store.Lease) int {
			return cmp.Or(a.Job.CreatedAt.AsTime().Compare(b.Job.CreatedAt.AsTime()), cmp.Compare(a.JobID, b.JobID))
		})
		return nil
	})
	if err != nil {
		return nil, false, err
	}
	return out, expired, nil
}

// expireQueue settles the expired leases of one queue.
func (s *Store) expireQueue(ctx context.Context, queue string) (int, error) {
	var k int
	err := s.write(ctx, func(tx pgx.Tx, n *notes) error {
		var err error
		k, err = expire(ctx, tx, n, storekit.Now(), "queue = $3 AND ", queue)
		return err
	})
	return k, err
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
	err := s.writeRow(ctx, ref.JobID, func(_ querier, r *sqlrows.Row, w *pgx.Batch, n *notes) error {
		var err error
		out, err = complete(w, n, ref, r, res)
		return err
	})
	return out, err
}

// complete queues on w the completion of the attempt ref leases, of the
// locked row r.
func complete(w *pgx.Batch, n *notes, ref store.LeaseRef, r *sqlrows.Row, res *spoolv1.JobResult) (*spoolv1.Job, error) {
	if storekit.SameCompletion(ref, r.Job.State, r.Job.Attempt, r.LeaseID) {
		return r.Job, nil
	}
	if err := storekit.CheckLease(ref, r.Job.State, r.Job.Attempt, r.LeaseID); err != nil {
		return nil, err
	}
	now := storekit.Now()
	o := storekit.Completed(r.Job, res, ref.Attempt, now)
	// A final job keeps its lease handle, so a repeat is recognised; a job
	// queued for a retry gets a new lease with its next attempt.
	queueSettle(w, r, o, spool.IsFinal(o.State), now)
	n.settled(r.Job, o)
	return r.Job, nil
}

// Release implements store.JobStore.
func (s *Store) Release(ctx context.Context, ref store.LeaseRef, countAttempt bool, reason string) (*spoolv1.Job, error) {
	var out *spoolv1.Job
	err := s.writeRow(ctx, ref.JobID, func(_ querier, r *sqlrows.Row, w *pgx.Batch, n *notes) error {
		if err := storekit.CheckLease(ref, r.Job.State, r.Job.Attempt, r.LeaseID); err != nil {
			return err
		}
		now := storekit.Now()
		o := storekit.Released(r.Job, countAttempt, reason, now)
		queueSettle(w, r, o, false, now)
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
