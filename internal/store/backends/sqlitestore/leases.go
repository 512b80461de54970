package sqlitestore

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"time"

	spoolv1 "github.com/spool-run/spool/gen/spool/v1"
	"github.com/spool-run/spool/internal/convert"
	"github.com/spool-run/spool/internal/store"
	"github.com/spool-run/spool/internal/store/backends/sqlrows"
	"github.com/spool-run/spool/internal/store/storekit"
)

// Dequeue implements store.JobStore.
func (s *Store) Dequeue(ctx context.Context, req store.DequeueRequest) ([]store.Lease, error) {
	return s.polls.Dequeue(ctx, req, func() ([]store.Lease, error) {
		return s.lease(ctx, req)
	})
}

// lease takes up to req.Max ready jobs, highest priority first, then
// oldest first, in one write: one query finds them, one statement leases
// them all (leaseJobs), each under a lease handle of its own. A queue
// with a max_running leases no more than it leaves room for, counted in
// the same write: the one writer makes the count exact.
func (s *Store) lease(ctx context.Context, req store.DequeueRequest) ([]store.Lease, error) {
	var out []store.Lease
	err := s.writeBare(ctx, 0, func(ctx context.Context, tx *sql.Tx, n *notes) error {
		out = nil
		now := storekit.Now()
		room := store.DequeueLimit(req.Max)
		if limit := s.queues.maxRunning(req.Queue); limit > 0 {
			var running int
			if err := tx.QueryRowContext(ctx, countRunning, req.Queue).Scan(&running); err != nil {
				return sqliteErr(err, "count the running jobs of queue %q", req.Queue)
			}
			if room = min(room, int(limit)-running); room <= 0 {
				return nil
			}
		}
		rows, err := tx.QueryContext(ctx, selectReady, req.Queue, now.UnixMicro(), room)
		if err != nil {
			return sqliteErr(err, "find ready jobs")
		}
		var ids []string
		for rows.Next() {
			var id string
			if err := rows.Scan(&id); err != nil {
				rows.Close()
				return sqliteErr(err, "find ready jobs")
			}
			ids = append(ids, id)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return sqliteErr(err, "find ready jobs")
		}
		if len(ids) == 0 {
			return nil
		}
		out, err = leaseJobs(ctx, tx, ids, now, now.Add(req.LeaseDuration))
		for _, id := range ids {
			n.job(id)
		}
		return afterWrite(err)
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// selectReady finds a queue's ready jobs in the order they are leased,
// from jobs_queued, whose predicate is written here as it is there (SQLite
// uses a partial index only for a query with its predicate as a term).
var selectReady = fmt.Sprintf(`SELECT job_id FROM jobs WHERE queue = ? AND state = %d AND (run_after IS NULL OR run_after <= ?)
	ORDER BY priority, created_at, job_id LIMIT ?`, sqlrows.Queued)

// countRunning counts a queue's running jobs, from jobs_ready.
var countRunning = fmt.Sprintf(`SELECT count(*) FROM jobs WHERE queue = ? AND state = %d`, sqlrows.Running)

// leaseJob leases the jobs of a JSON array of ids (argument 5), each
// under the lease handle at its place in argument 2, a blob of the
// handles one after another, leaseIDLen bytes each: a blob, as substr
// finds a place in text by counting its characters from the start, which
// for the last of 500 handles is 18,000 of them.
var leaseJob = fmt.Sprintf(`UPDATE jobs SET state = ?1, attempt = attempt + 1,
	lease_id = CAST(substr(?2, p.n * %[1]d + 1, %[1]d) AS TEXT),
	lease_expires_at = ?3, updated_at = ?4, started_at = ?4
	FROM (SELECT key AS n, value AS id FROM json_each(?5)) AS p WHERE jobs.job_id = p.id RETURNING %[2]s`, leaseIDLen, sqlrows.JobCols)

// leaseIDLen is the length of a lease handle (storekit.NewLeaseID, a
// UUID's text).
const leaseIDLen = 36

// leaseJobs leases the queued jobs ids, in one statement, and returns
// their leases in the order of ids.
func leaseJobs(ctx context.Context, tx *sql.Tx, ids []string, now, expires time.Time) ([]store.Lease, error) {
	handles := make([]byte, 0, len(ids)*leaseIDLen)
	for range ids {
		id := storekit.NewLeaseID()
		if len(id) != leaseIDLen {
			return nil, fmt.Errorf("sqlite: a lease handle of %d bytes, want %d", len(id), leaseIDLen)
		}
		handles = append(handles, id...)
	}
	list, err := json.Marshal(ids)
	if err != nil {
		return nil, err
	}
	rows, err := tx.QueryContext(ctx, leaseJob, sqlrows.Running, handles, expires.UnixMicro(), now.UnixMicro(), string(list))
	if err != nil {
		return nil, sqliteErr(err, "lease %d jobs", len(ids))
	}
	defer rows.Close()
	at := make(map[string]int, len(ids))
	for i, id := range ids {
		at[id] = i
	}
	out := make([]store.Lease, len(ids))
	leased := 0
	for rows.Next() {
		r, err := sqlrows.ScanJob(rows)
		if err != nil {
			return nil, sqliteErr(err, "lease %d jobs", len(ids))
		}
		out[at[r.Job.JobId]] = r.Lease()
		leased++
	}
	if err := rows.Err(); err != nil {
		return nil, sqliteErr(err, "lease %d jobs", len(ids))
	}
	if leased != len(ids) {
		// The ids were read in this transaction, on its one connection.
		return nil, fmt.Errorf("sqlite: leased %d of %d ready jobs", leased, len(ids))
	}
	return out, nil
}

// expire settles running jobs whose lease ran out as storekit.Expired
// decides.
func expire(ctx context.Context, tx *sql.Tx, n *notes, now time.Time) (int, error) {
	rows, err := tx.QueryContext(ctx, `SELECT `+sqlrows.JobCols+` FROM jobs WHERE state = ? AND lease_expires_at <= ?`, sqlrows.Running, now.UnixMicro())
	if err != nil {
		return 0, sqliteErr(err, "find expired leases")
	}
	var found []*sqlrows.Row
	for rows.Next() {
		r, err := sqlrows.ScanJob(rows)
		if err != nil {
			rows.Close()
			return 0, sqliteErr(err, "find expired leases")
		}
		found = append(found, r)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return 0, sqliteErr(err, "find expired leases")
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

// ExpireLeases implements store.JobStore. The last sweep's time is kept
// in memory (storekit.SweepClock): one server owns the file.
func (s *Store) ExpireLeases(ctx context.Context, sw store.Sweep) (store.Swept, error) {
	var (
		out store.Swept
		now time.Time
	)
	err := s.write(ctx, func(ctx context.Context, tx *sql.Tx, n *notes) error {
		out, now = store.Swept{}, storekit.Now()
		if from, ok := storekit.GraceFrom(s.swept.Last(), sw, now); ok {
			k, err := graceLeases(ctx, tx, from, now.Add(sw.Grace))
			if err != nil {
				return err
			}
			out.Graced = k
		}
		var err error
		out.Settled, err = expire(ctx, tx, n, now)
		return err
	})
	if err != nil {
		return store.Swept{}, err
	}
	s.swept.Swept(now)
	return out, nil
}

// graceLeases lengthens to until the running leases that were alive at
// from (storekit.Graced).
func graceLeases(ctx context.Context, tx *sql.Tx, from, until time.Time) (int, error) {
	res, err := tx.ExecContext(ctx, `UPDATE jobs SET lease_expires_at = ? WHERE state = ? AND lease_expires_at >= ? AND lease_expires_at < ?`,
		until.UnixMicro(), sqlrows.Running, from.UnixMicro(), until.UnixMicro())
	if err != nil {
		return 0, sqliteErr(err, "grace leases")
	}
	n, err := res.RowsAffected()
	return int(n), err
}

// current reads the job ref leases and checks the lease is its current one.
func current(ctx context.Context, tx *sql.Tx, ref store.LeaseRef) (*sqlrows.Row, error) {
	r, err := getRow(ctx, tx, ref.JobID)
	if err != nil {
		return nil, err
	}
	return r, storekit.CheckLease(ref, r.Job.State, r.Job.Attempt, r.LeaseID)
}

// appendable reads the job ref appends to and checks ref may still add to
// its log (storekit.CheckAppend).
func appendable(ctx context.Context, tx *sql.Tx, ref store.LeaseRef) (*sqlrows.Row, error) {
	r, err := getRow(ctx, tx, ref.JobID)
	if err != nil {
		return nil, err
	}
	return r, storekit.CheckAppend(ref, r.Job.State, r.Job.Attempt, r.LeaseID)
}

// Heartbeat implements store.JobStore.
func (s *Store) Heartbeat(ctx context.Context, ref store.LeaseRef, d time.Duration) (time.Time, bool, error) {
	var (
		expires time.Time
		cancel  bool
	)
	err := s.writeBare(ctx, 0, func(ctx context.Context, tx *sql.Tx, _ *notes) error {
		// The common case in one statement; the read below only explains
		// a refusal.
		expires = storekit.Now().Add(d)
		err := tx.QueryRowContext(ctx, `UPDATE jobs SET lease_expires_at = ? WHERE job_id = ? AND state = ? AND attempt = ? AND lease_id = ?
			RETURNING cancel_requested`, expires.UnixMicro(), ref.JobID, sqlrows.Running, ref.Attempt, ref.LeaseID).Scan(&cancel)
		switch {
		case err == sql.ErrNoRows:
			_, err = current(ctx, tx, ref)
			if err == nil {
				err = fmt.Errorf("sqlite: heartbeat of job %s matched no lease", ref.JobID)
			}
		case err != nil:
			err = sqliteErr(err, "heartbeat of job %s", ref.JobID)
		}
		return err
	})
	if err != nil {
		return time.Time{}, false, err
	}
	return expires, cancel, nil
}

// Complete implements store.JobStore. It checks the lease before it
// writes, so it needs no savepoint (pendingWrite.bare). Completions that
// meet in a group are made together (completions.go).
func (s *Store) Complete(ctx context.Context, ref store.LeaseRef, res *spoolv1.JobResult) (*spoolv1.Job, error) {
	c := &completion{ref: ref, res: res}
	err := s.submit(ctx, &pendingWrite{fn: c.alone, bare: true, completion: c})
	return c.out, err
}

// completeIn records the result of the attempt ref leases, in tx.
func completeIn(ctx context.Context, tx *sql.Tx, n *notes, ref store.LeaseRef, res *spoolv1.JobResult) (*spoolv1.Job, error) {
	r, err := getRow(ctx, tx, ref.JobID)
	if err != nil {
		return nil, err
	}
	now := storekit.Now()
	out, o, err := decideCompletion(r, ref, res, now)
	if err != nil || o == nil {
		return out, err
	}
	if err := settle(ctx, tx, r, *o, convert.State(o.State).IsFinal(), now); err != nil {
		return nil, err
	}
	n.settled(r.Job, *o)
	return r.Job, nil
}

// decideCompletion decides the completion of the attempt ref leases from
// its job's row r: the job to answer with, and the outcome to write (nil:
// nothing, the completion repeats one already stored).
func decideCompletion(r *sqlrows.Row, ref store.LeaseRef, res *spoolv1.JobResult, now time.Time) (*spoolv1.Job, *storekit.Outcome, error) {
	if storekit.SameCompletion(ref, r.Job.State, r.Job.Attempt, r.LeaseID) {
		return r.Job, nil, nil
	}
	if err := storekit.CheckLease(ref, r.Job.State, r.Job.Attempt, r.LeaseID); err != nil {
		return nil, nil, err
	}
	// A final job keeps its lease handle, so a repeat is recognised; a job
	// scheduled for a retry gets a new lease with its next attempt.
	o := storekit.Completed(r.Job, res, ref.Attempt, now)
	return r.Job, &o, nil
}

// Release implements store.JobStore.
func (s *Store) Release(ctx context.Context, ref store.LeaseRef, countAttempt bool, reason string) (*spoolv1.Job, error) {
	var out *spoolv1.Job
	err := s.writeBare(ctx, 0, func(ctx context.Context, tx *sql.Tx, n *notes) error {
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

// GraceLeases implements store.LeaseGracer.
func (s *Store) GraceLeases(ctx context.Context, until time.Time) (int, error) {
	var n int64
	err := s.write(ctx, func(ctx context.Context, tx *sql.Tx, _ *notes) error {
		res, err := tx.ExecContext(ctx, `UPDATE jobs SET lease_expires_at = ? WHERE state = ? AND lease_expires_at < ?`,
			until.UnixMicro(), sqlrows.Running, until.UnixMicro())
		if err != nil {
			return sqliteErr(err, "grace leases")
		}
		n, err = res.RowsAffected()
		return err
	})
	return int(n), err
}
