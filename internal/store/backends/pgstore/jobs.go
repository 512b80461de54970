package pgstore

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	spoolv1 "github.com/spool-run/spool/gen/spool/v1"
	"github.com/spool-run/spool/internal/store"
	"github.com/spool-run/spool/internal/store/backends/sqlrows"
	"github.com/spool-run/spool/internal/store/storekit"
)

// querier runs statements: the pool (each its own transaction), or a
// transaction.
type querier interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
	SendBatch(ctx context.Context, b *pgx.Batch) pgx.BatchResults
}

var (
	selectJob       = `SELECT ` + sqlrows.JobCols + ` FROM jobs WHERE job_id = $1`
	selectJobLocked = selectJob + ` FOR UPDATE`
	insertJob       = sqlrows.Dollar(sqlrows.InsertJob)
	selectSecrets   = sqlrows.Dollar(sqlrows.SelectSecrets)
)

// getRow reads a job's row with q; q is a transaction and the row locked
// until it ends when lock is set.
func getRow(ctx context.Context, q querier, id string, lock bool) (*sqlrows.Row, error) {
	stmt := selectJob
	if lock {
		stmt = selectJobLocked
	}
	r, err := sqlrows.ScanJob(q.QueryRow(ctx, stmt, id))
	if err != nil {
		return nil, rowErr(err, id)
	}
	return r, nil
}

// keyTaken reports whether err is an insert refused by the unique
// constraint named constraint: a row with the same key exists.
func keyTaken(err error, constraint string) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && pe.Code == "23505" && pe.ConstraintName == constraint
}

// rowErr explains a failed read of job id's row.
func rowErr(err error, id string) error {
	if notFound(err) {
		return store.JobNotFound(id)
	}
	return pgErr(err, "read job %s", id)
}

// Enqueue implements store.JobStore. The request_id column is UNIQUE: the
// insert of a repeat does nothing (a concurrent one waits for the first to
// commit), and the first job is read back. Enqueues that arrive together
// share one insert (groupenqueue.go).
func (s *Store) Enqueue(ctx context.Context, nj store.NewJob) (*spoolv1.Job, bool, error) {
	if err := nj.Check(); err != nil {
		return nil, false, err
	}
	j := storekit.NewJobRecord(nj, storekit.Now())
	args := sqlrows.InsertJobArgs(j, nj.Secrets)
	if len(j.After) > 0 {
		return s.enqueueAfter(ctx, j, args)
	}
	keys := []string{"id " + j.JobId}
	if j.RequestId != "" {
		keys = append(keys, "request "+j.RequestId)
	}
	p, err := s.jobs.do(ctx, &newJob{job: j, args: args}, keys, argsSize(args))
	switch {
	case err != nil:
		return nil, false, err
	case p.alone:
		return s.enqueueAlone(context.WithoutCancel(ctx), j, args)
	case p.err != nil:
		return nil, false, p.err
	}
	return p.item.out, p.item.created, nil
}

// enqueueAlone inserts job j, whose InsertJobArgs are args, in a statement
// of its own.
func (s *Store) enqueueAlone(ctx context.Context, j *spoolv1.Job, args []any) (*spoolv1.Job, bool, error) {
	var (
		out     *spoolv1.Job
		created bool
	)
	err := s.writeOne(func(q querier, n *notes) error {
		tag, err := q.Exec(ctx, insertJob, args...)
		if keyTaken(err, "jobs_pkey") {
			// The insert's ON CONFLICT covers request_id alone: a repeat
			// racing the first insert of its request can fail here
			// instead of doing nothing, once the first commits.
			r, err := getRow(ctx, q, j.JobId, false)
			if err != nil {
				return err
			}
			out, err = storekit.NamedRepeat(r.Job, j)
			return err
		}
		if err != nil {
			return pgErr(err, "insert job")
		}
		if tag.RowsAffected() == 1 {
			out, created = j, true
			n.created(j)
			return nil
		}
		// The first job of the request_id is committed: the insert waited
		// for it.
		r, err := sqlrows.ScanJob(q.QueryRow(ctx, `SELECT `+sqlrows.JobCols+` FROM jobs WHERE request_id = $1`, j.RequestId))
		if err != nil {
			return pgErr(err, "read the job of request %q", j.RequestId)
		}
		out = r.Job
		return nil
	})
	return out, created, err
}

// Statements of a job that runs after others.
var (
	// lockParents reads and locks the rows of the jobs a new job runs
	// after, in the order of their ids (as selectJobsLocked), so that a
	// parent cannot be deleted before the new job's rows name it.
	lockParents = `SELECT ` + sqlrows.JobCols + ` FROM jobs WHERE job_id = ANY($1) ORDER BY job_id FOR UPDATE`
	// insertAnyJob is insertJob that skips a job whose id is in use too:
	// in a transaction, a refused insert would end it.
	insertAnyJob = sqlrows.Dollar(sqlrows.InsertNewJob) + ` ON CONFLICT DO NOTHING`
	// insertAfter records the jobs a job runs after (arguments: job_id,
	// their ids, their positions).
	insertAfter = `INSERT INTO job_after (job_id, after_id, pos) SELECT $1, a, p FROM unnest($2::text[], $3::integer[]) AS u(a, p)
		ON CONFLICT DO NOTHING`
	deleteAfter = sqlrows.Dollar(sqlrows.DeleteAfter)
)

// enqueueAfter inserts job j, which runs after other jobs, in a
// transaction of its own: the jobs it runs after are locked and must all
// exist, its job_after rows are written, and it is added to each one's
// followers, all or nothing. A repeat of a request stored before returns
// that job and writes nothing else.
func (s *Store) enqueueAfter(ctx context.Context, j *spoolv1.Job, args []any) (*spoolv1.Job, bool, error) {
	var (
		out     *spoolv1.Job
		created bool
	)
	err := s.write(ctx, func(tx pgx.Tx, n *notes) error {
		out, created = nil, false
		rows, err := tx.Query(ctx, lockParents, j.After)
		if err != nil {
			return pgErr(err, "read the jobs job %s runs after", j.JobId)
		}
		found, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (*sqlrows.Row, error) { return sqlrows.ScanJob(row) })
		if err != nil {
			return pgErr(err, "read the jobs job %s runs after", j.JobId)
		}
		parents := make(map[string]*sqlrows.Row, len(found))
		for _, r := range found {
			parents[r.Job.JobId] = r
		}
		changed, err := sqlrows.AddFollower(j.After, parents, j.JobId)
		if err != nil {
			return err
		}
		tag, err := tx.Exec(ctx, insertAnyJob, args...)
		if err != nil {
			return pgErr(err, "insert job")
		}
		if tag.RowsAffected() == 0 {
			out, err = s.repeatIn(ctx, tx, j)
			return err
		}
		if _, err := tx.Exec(ctx, insertAfter, j.JobId, j.After, sqlrows.AfterPositions(j.After)); err != nil {
			return pgErr(err, "record the jobs job %s runs after", j.JobId)
		}
		b := &pgx.Batch{}
		for _, p := range changed {
			q, args := sqlrows.WriteBook(p)
			b.Queue(sqlrows.Dollar(q), args...)
			n.job(p.JobId)
		}
		if err := tx.SendBatch(ctx, b).Close(); err != nil {
			return pgErr(err, "add job %s to the followers of the jobs it runs after", j.JobId)
		}
		out, created = j, true
		return nil
	})
	return out, created, err
}

// repeatIn answers an enqueue of j whose insert found its request id or
// job id in use: the stored job of the request, or as storekit.NamedRepeat
// decides.
func (s *Store) repeatIn(ctx context.Context, q querier, j *spoolv1.Job) (*spoolv1.Job, error) {
	if j.RequestId != "" {
		r, err := sqlrows.ScanJob(q.QueryRow(ctx, `SELECT `+sqlrows.JobCols+` FROM jobs WHERE request_id = $1`, j.RequestId))
		if err == nil {
			return r.Job, nil
		}
		if !notFound(err) {
			return nil, pgErr(err, "read the job of request %q", j.RequestId)
		}
	}
	r, err := getRow(ctx, q, j.JobId, false)
	if err != nil {
		return nil, err
	}
	return storekit.NamedRepeat(r.Job, j)
}

// Get implements store.JobStore.
func (s *Store) Get(ctx context.Context, id string) (*spoolv1.Job, error) {
	r, err := getRow(ctx, s.pool, id, false)
	if err != nil {
		return nil, err
	}
	return r.Job, nil
}

// JobSecrets implements store.JobStore.
func (s *Store) JobSecrets(ctx context.Context, id string) ([]byte, error) {
	var b []byte
	if err := s.pool.QueryRow(ctx, selectSecrets, id).Scan(&b); err != nil {
		return nil, rowErr(err, id)
	}
	return b, nil
}

// List implements store.JobStore, with the listing query the SQL stores
// share: each arm a range of an index in listing order.
func (s *Store) List(ctx context.Context, f store.ListFilter) ([]*spoolv1.Job, string, error) {
	limit := store.ListLimit(f.Limit)
	q, args, err := sqlrows.ListQuery(f, limit+1)
	if err != nil {
		return nil, "", err
	}
	rows, err := s.pool.Query(ctx, sqlrows.Dollar(q), args...)
	if err != nil {
		return nil, "", pgErr(err, "list jobs")
	}
	defer rows.Close()
	var out []*spoolv1.Job
	for rows.Next() {
		r, err := sqlrows.ScanJob(rows)
		if err != nil {
			return nil, "", pgErr(err, "list jobs")
		}
		out = append(out, r.Job)
	}
	if err := rows.Err(); err != nil {
		return nil, "", pgErr(err, "list jobs")
	}
	out, next := sqlrows.NextCursor(out, limit)
	return out, next, nil
}

// Cancel implements store.JobStore.
func (s *Store) Cancel(ctx context.Context, id, reason string) (*spoolv1.Job, error) {
	var out *spoolv1.Job
	err := s.write(ctx, func(tx pgx.Tx, n *notes) error {
		r, err := getRow(ctx, tx, id, true)
		if err != nil {
			return err
		}
		now := storekit.Now()
		switch r.Job.State {
		case spoolv1.JobState_JOB_STATE_QUEUED, spoolv1.JobState_JOB_STATE_SCHEDULED:
			if err := settle(ctx, tx, r, storekit.CancelBeforeStart(reason, now), false, now); err != nil {
				return err
			}
			if _, err := tx.Exec(ctx, deleteAfter, id); err != nil {
				return pgErr(err, "cancel job %s", id)
			}
		case spoolv1.JobState_JOB_STATE_RUNNING:
			if !r.Job.CancelRequested {
				r.Job.CancelReason = reason
				if _, err := tx.Exec(ctx, `UPDATE jobs SET cancel_requested = true, book = $1, updated_at = $2 WHERE job_id = $3`,
					sqlrows.Book(r.Job), now.UnixMicro(), id); err != nil {
					return pgErr(err, "cancel job %s", id)
				}
			}
		default:
			out = r.Job
			return nil
		}
		n.job(id)
		r, err = getRow(ctx, tx, id, false)
		if err != nil {
			return err
		}
		out = r.Job
		return nil
	})
	return out, err
}

// settle writes a lease's outcome to the job's row (sqlrows.Settle).
func settle(ctx context.Context, tx pgx.Tx, r *sqlrows.Row, o storekit.Outcome, keepLease bool, now time.Time) error {
	q, args := sqlrows.Settle(r, o, keepLease, now)
	if _, err := tx.Exec(ctx, sqlrows.Dollar(q), args...); err != nil {
		return pgErr(err, "settle job %s", r.Job.JobId)
	}
	return nil
}

// AddNote implements store.JobStore.
func (s *Store) AddNote(ctx context.Context, id, note string) (*spoolv1.Job, error) {
	return s.edit(ctx, id, sqlrows.AddNote(note))
}

// AddRerun implements store.JobStore.
func (s *Store) AddRerun(ctx context.Context, id, rerunID string) (*spoolv1.Job, error) {
	return s.edit(ctx, id, sqlrows.AddRerun(rerunID))
}

// edit changes a job's bookkeeping with fn, its row locked, and writes it
// back with the COMMIT; when fn changed nothing, nothing is written and
// nobody woken.
func (s *Store) edit(ctx context.Context, id string, fn sqlrows.Edit) (*spoolv1.Job, error) {
	var out *spoolv1.Job
	err := s.writeRow(ctx, id, 0, func(_ context.Context, _ querier, r *sqlrows.Row, w *rowWrites, n *notes) error {
		out = r.Job
		if !fn(r.Job) {
			return nil
		}
		q, args := sqlrows.WriteEdit(r.Job)
		w.Queue(sqlrows.Dollar(q), args...)
		n.job(id)
		return nil
	})
	return out, err
}
