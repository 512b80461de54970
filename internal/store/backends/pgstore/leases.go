package pgstore

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"

	spoolv1 "github.com/spool-run/spool/gen/spool/v1"
	"github.com/spool-run/spool/internal/convert"
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

// leaseReady leases a queue's ready jobs in one statement, highest
// priority first, then oldest first. FOR UPDATE SKIP LOCKED passes over
// rows another server is leasing at the same moment, so two dequeues never
// wait on each other and never both take one attempt.
//
// The states are written into the statements that search by them, not
// passed as arguments: PostgreSQL uses a partial index (jobs_queued_priority,
// jobs_running) only for a statement whose own text implies its predicate,
// and a prepared statement's generic plan cannot know an argument's value.
//
// The number leased is at most what the queue's max_running leaves room
// for: the limit, less the queue's running jobs. A queue without a limit
// (no row in queues, or a NULL max_running) does not count them: the count
// is in the CASE's other arm, which PostgreSQL evaluates only when taken.
// For a queue with a limit the count is exact only under the queue's limit
// lock (limitLock), taken by a statement before this one.
//
// leaseUnpaused is the same, leasing nothing while the queue is paused
// (the term does not depend on the row: PostgreSQL checks it once).
var leaseReady, leaseUnpaused = leaseStatement(""), leaseStatement(" AND NOT EXISTS (SELECT 1 FROM queues WHERE name = $1 AND paused_at IS NOT NULL)")

func leaseStatement(unpaused string) string {
	return fmt.Sprintf(`WITH room AS (
		SELECT CASE WHEN q.max_running IS NULL THEN $3
			ELSE LEAST($3, GREATEST(0, q.max_running - (SELECT count(*) FROM jobs WHERE queue = $1 AND state = %[3]d))) END AS n
		FROM (SELECT max(max_running) AS max_running FROM queues WHERE name = $1) AS q),
	ready AS (
		SELECT job_id FROM jobs
		WHERE queue = $1 AND state = %[1]d AND (run_after IS NULL OR run_after <= $2)%[2]s
		ORDER BY priority, created_at, job_id LIMIT (SELECT n FROM room)
		FOR UPDATE SKIP LOCKED)
	UPDATE jobs SET state = %[3]d, attempt = attempt + 1, lease_id = gen_random_uuid()::text, lease_expires_at = $4, updated_at = $2, started_at = $2
	WHERE job_id IN (SELECT job_id FROM ready)
	RETURNING `+sqlrows.JobCols, sqlrows.Queued, unpaused, sqlrows.Running)
}

// A queue's limit lock makes the leases of a queue with a max_running take
// turns, on every server: each counts the running jobs, with a snapshot
// taken once the lock is held, and leases no more than the limit leaves.
// The lock is taken only for a queue whose row has a limit, so the leases
// of every other queue pay one search of the small queues table. It is an
// advisory lock of PostgreSQL's, held to the end of the lease's
// transaction, in a class of its own numbered by the hash of the queue's
// name (two queues with limits whose names hash alike take turns too).
const (
	limitLockClass = 0x73706f6c // "spol"
	limitLock      = `SELECT pg_advisory_xact_lock($1, hashtext($2)) FROM queues WHERE name = $2 AND max_running IS NOT NULL`
	// limitAndPauseLock is limitLock with the queue's pause lock, shared
	// (leaseUnpaused), in one statement.
	limitAndPauseLock = `SELECT pg_advisory_xact_lock_shared($1, hashtext($2)),
		(SELECT pg_advisory_xact_lock($3, hashtext($2)) FROM queues WHERE name = $2 AND max_running IS NOT NULL)`
)

// running is the search condition of running jobs, as jobs_running's
// predicate says it; the searches' own terms on lease_expires_at (<, <=)
// imply the rest of the predicate, that it is not NULL.
var running = fmt.Sprintf("state = %d", sqlrows.Running)

// DequeueUnpaused implements store.PausedLeaser: the pause is read by the
// lease's own statement, under the queue's pause lock (pauseLock), in one
// round trip.
func (s *Store) DequeueUnpaused(ctx context.Context, req store.DequeueRequest) ([]store.Lease, error) {
	return s.polls.Dequeue(ctx, req, func() ([]store.Lease, error) {
		return s.leaseUnpaused(ctx, req)
	})
}

// lease takes up to req.Max ready jobs, by priority then oldest first, in
// one round trip: the queue's limit lock, then the lease, in one batch
// (one implicit transaction, which releases the lock as it commits).
func (s *Store) lease(ctx context.Context, req store.DequeueRequest) ([]store.Lease, error) {
	return s.leaseWith(ctx, req, func(q querier, args ...any) (pgx.Rows, error) {
		b := &pgx.Batch{}
		b.Queue(limitLock, limitLockClass, req.Queue)
		b.Queue(leaseReady, args...)
		return sendLease(ctx, q, b)
	})
}

// leaseUnpaused is lease of a queue that is not paused. The statement that
// leases holds the queue's pause lock shared (taken in the statement
// before it, with the limit lock, so the lease's snapshot is taken once
// the locks are held), and a pause takes it alone before it writes: a
// pause waits for the leases under way to commit, and the leases after it
// see the pause.
func (s *Store) leaseUnpaused(ctx context.Context, req store.DequeueRequest) ([]store.Lease, error) {
	return s.leaseWith(ctx, req, func(q querier, args ...any) (pgx.Rows, error) {
		b := &pgx.Batch{}
		b.Queue(limitAndPauseLock, pauseLockClass, req.Queue, limitLockClass)
		b.Queue(leaseUnpaused, args...)
		return sendLease(ctx, q, b)
	})
}

// sendLease sends a batch of a lock and a lease, and returns the lease's
// rows.
func sendLease(ctx context.Context, q querier, b *pgx.Batch) (pgx.Rows, error) {
	br := q.SendBatch(ctx, b)
	if _, err := br.Exec(); err != nil {
		br.Close()
		return nil, err
	}
	rows, err := br.Query()
	if err != nil {
		br.Close()
		return nil, err
	}
	return batchRows{Rows: rows, batch: br}, nil
}

// batchRows are the rows of a batch's last query: closing them closes the
// batch, which ends its implicit transaction.
type batchRows struct {
	pgx.Rows
	batch pgx.BatchResults
}

func (r batchRows) Close() {
	r.Rows.Close()
	_ = r.batch.Close()
}

// Err is the rows' error, or, once they are read, the batch's: its
// commit's.
func (r batchRows) Err() error {
	if err := r.Rows.Err(); err != nil {
		return err
	}
	r.Rows.Close()
	return r.batch.Close()
}

// leaseWith leases with the statement query runs (arguments: queue, now,
// limit, lease expiry).
func (s *Store) leaseWith(ctx context.Context, req store.DequeueRequest, query func(q querier, args ...any) (pgx.Rows, error)) ([]store.Lease, error) {
	var out []store.Lease
	err := s.writeOne(func(q querier, n *notes) error {
		out = out[:0]
		now := storekit.Now()
		rows, err := query(q, req.Queue, now.UnixMicro(), store.DequeueLimit(req.Max), now.Add(req.LeaseDuration).UnixMicro())
		if err != nil {
			return pgErr(err, "lease jobs of queue %q", req.Queue)
		}
		found, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (*sqlrows.Row, error) { return sqlrows.ScanJob(row) })
		if err != nil {
			return pgErr(err, "lease jobs of queue %q", req.Queue)
		}
		for _, r := range found {
			n.job(r.Job.JobId)
			out = append(out, r.Lease())
		}
		// RETURNING keeps no order: by priority, then oldest first, as
		// promised.
		slices.SortFunc(out, func(a, b store.Lease) int {
			return cmp.Or(cmp.Compare(a.Job.Priority, b.Job.Priority),
				a.Job.CreatedAt.AsTime().Compare(b.Job.CreatedAt.AsTime()), cmp.Compare(a.JobID, b.JobID))
		})
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// expire settles running jobs whose lease ran out as storekit.Expired
// decides. Rows another server is settling are skipped: it settles them.
func expire(ctx context.Context, tx pgx.Tx, n *notes, now time.Time) (int, error) {
	rows, err := tx.Query(ctx, `SELECT `+sqlrows.JobCols+` FROM jobs WHERE `+running+` AND lease_expires_at <= $1
		FOR UPDATE SKIP LOCKED`, now.UnixMicro())
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

// ExpireLeases implements store.JobStore. The last sweep's time is kept in
// the sweeps table, so that every server sees an outage there whether or
// not it saw one itself. It is read (and its row locked: sweeps of several
// servers take turns, and two never grace the same leases in different
// orders), the grace written and the new time recorded in the transaction
// that settles, so a sweep that reads a recent time also sees the grace of
// the sweep that wrote it.
func (s *Store) ExpireLeases(ctx context.Context, sw store.Sweep) (store.Swept, error) {
	var out store.Swept
	err := s.write(ctx, func(tx pgx.Tx, n *notes) error {
		out = store.Swept{}
		now := storekit.Now()
		last, err := lastSweep(ctx, tx)
		if err != nil {
			return err
		}
		if from, ok := storekit.GraceFrom(last, sw, now); ok {
			until := now.Add(sw.Grace)
			tag, err := tx.Exec(ctx, `UPDATE jobs SET lease_expires_at = $1 WHERE `+running+` AND lease_expires_at >= $2 AND lease_expires_at < $1`,
				until.UnixMicro(), from.UnixMicro())
			if err != nil {
				return pgErr(err, "grace leases after an outage")
			}
			out.Graced = int(tag.RowsAffected())
		}
		_, err = tx.Exec(ctx, `INSERT INTO sweeps (swept_at) VALUES ($1)
			ON CONFLICT (one) DO UPDATE SET swept_at = GREATEST(sweeps.swept_at, excluded.swept_at)`, now.UnixMicro())
		if err != nil {
			return pgErr(err, "record the sweep of leases")
		}
		out.Settled, err = expire(ctx, tx, n, now)
		return err
	})
	if err != nil {
		return store.Swept{}, err
	}
	return out, nil
}

// lastSweep reads when leases were last swept (zero: never), and holds
// the record until the transaction ends.
func lastSweep(ctx context.Context, tx pgx.Tx) (time.Time, error) {
	var at int64
	err := tx.QueryRow(ctx, `SELECT swept_at FROM sweeps FOR UPDATE`).Scan(&at)
	switch {
	case notFound(err):
		return time.Time{}, nil
	case err != nil:
		return time.Time{}, pgErr(err, "read when leases were last swept")
	}
	return time.UnixMicro(at).UTC(), nil
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
	err := s.writeRow(ctx, ref.JobID, 0, func(_ context.Context, _ querier, r *sqlrows.Row, w *rowWrites, n *notes) error {
		var err error
		out, err = complete(w, n, ref, r, res)
		return err
	})
	return out, err
}

// complete queues on w the completion of the attempt ref leases, of the
// locked row r.
func complete(w *rowWrites, n *notes, ref store.LeaseRef, r *sqlrows.Row, res *spoolv1.JobResult) (*spoolv1.Job, error) {
	if storekit.SameCompletion(ref, r.Job.State, r.Job.Attempt, r.LeaseID) {
		return r.Job, nil
	}
	if err := storekit.CheckLease(ref, r.Job.State, r.Job.Attempt, r.LeaseID); err != nil {
		return nil, err
	}
	now := storekit.Now()
	o := storekit.Completed(r.Job, res, ref.Attempt, now)
	// A final job keeps its lease handle, so a repeat is recognised; a job
	// scheduled for a retry gets a new lease with its next attempt.
	w.settle(r, o, convert.State(o.State).IsFinal(), now)
	n.settled(r.Job, o)
	return r.Job, nil
}

// Release implements store.JobStore.
func (s *Store) Release(ctx context.Context, ref store.LeaseRef, countAttempt bool, reason string) (*spoolv1.Job, error) {
	var out *spoolv1.Job
	err := s.writeRow(ctx, ref.JobID, 0, func(_ context.Context, _ querier, r *sqlrows.Row, w *rowWrites, n *notes) error {
		if err := storekit.CheckLease(ref, r.Job.State, r.Job.Attempt, r.LeaseID); err != nil {
			return err
		}
		now := storekit.Now()
		o := storekit.Released(r.Job, countAttempt, reason, now)
		w.settle(r, o, false, now)
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
		tag, err := tx.Exec(ctx, `UPDATE jobs SET lease_expires_at = $1 WHERE `+running+` AND lease_expires_at < $1`, until.UnixMicro())
		if err != nil {
			return pgErr(err, "grace leases")
		}
		k = tag.RowsAffected()
		return nil
	})
	return int(k), err
}
