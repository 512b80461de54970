package sqlitestore

import (
	"context"
	"database/sql"
	"errors"
	"math/bits"
	"strings"
	"time"

	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/spool-run/spool"
	spoolv1 "github.com/spool-run/spool/gen/spool/v1"
	"github.com/spool-run/spool/internal/store"
	"github.com/spool-run/spool/internal/store/backends/sqlrows"
	"github.com/spool-run/spool/internal/store/storekit"
)

// getRow reads a job's row with q (the writer inside a transaction, or the
// reader pool).
func getRow(ctx context.Context, q interface {
	QueryRowContext(context.Context, string, ...any) *sql.Row
}, id string) (*sqlrows.Row, error) {
	r, err := sqlrows.ScanJob(q.QueryRowContext(ctx, `SELECT `+sqlrows.JobCols+` FROM jobs WHERE job_id = ?`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, store.JobNotFound(id)
	}
	if err != nil {
		return nil, sqliteErr(err, "read job %s", id)
	}
	return r, nil
}

// Enqueue implements store.JobStore. The request_id column is UNIQUE: the
// insert of a repeat does nothing, and the first job is read back. Writes
// are serialized on one connection, so the pair is atomic. The new jobs of
// a group are inserted together first (insertJobs); this write's own
// statements run only for a job that insert left out.
func (s *Store) Enqueue(ctx context.Context, nj store.NewJob) (*spoolv1.Job, bool, error) {
	if err := nj.Check(); err != nil {
		return nil, false, err
	}
	j := storekit.NewJobRecord(nj, storekit.Now())
	w, e := enqueueWrite(j, nj.Secrets)
	if len(j.After) > 0 {
		w = enqueueAfterWrite(j, nj.Secrets, e)
	}
	if err := s.submit(ctx, w); err != nil {
		return nil, false, err
	}
	return e.job, e.created, nil
}

// enqueued is what an Enqueue write returns.
type enqueued struct {
	job     *spoolv1.Job
	created bool
}

// enqueueWrite is the write that stores the new job j, and where it puts
// its outcome.
func enqueueWrite(j *spoolv1.Job, secrets []byte) (*pendingWrite, *enqueued) {
	e := &enqueued{}
	args := sqlrows.InsertJobArgs(j, secrets)
	stored := func(n *notes) {
		e.job, e.created = j, true
		n.created(j)
	}
	// Bare: the one statement that writes is the first, and what follows
	// it only reads.
	return &pendingWrite{size: argsSize(args), bare: true, job: &jobInsert{id: j.JobId, requestID: j.RequestId, args: args, stored: stored},
		fn: func(ctx context.Context, tx *sql.Tx, n *notes) error {
			*e = enqueued{}
			res, err := tx.ExecContext(ctx, sqlrows.InsertJob, args...)
			if primaryKeyTaken(err) {
				r, err := getRow(ctx, tx, j.JobId)
				if err != nil {
					return err
				}
				e.job, err = storekit.NamedRepeat(r.Job, j)
				return err
			}
			if err != nil {
				return sqliteErr(err, "insert job")
			}
			if k, _ := res.RowsAffected(); k == 1 {
				stored(n)
				return nil
			}
			r, err := sqlrows.ScanJob(tx.QueryRowContext(ctx, `SELECT `+sqlrows.JobCols+` FROM jobs WHERE request_id = ?`, j.RequestId))
			if err != nil {
				return sqliteErr(err, "read job of request %q", j.RequestId)
			}
			e.job = r.Job
			return nil
		}}, e
}

// enqueueAfterWrite is the write that stores the new job j, which runs
// after other jobs, putting its outcome in e: the jobs it runs after must
// all exist, its job_after rows are written, and it is added to each
// one's followers, all or nothing (the write has a savepoint of its own).
// A repeat of a request stored before returns that job and writes
// nothing else.
func enqueueAfterWrite(j *spoolv1.Job, secrets []byte, e *enqueued) *pendingWrite {
	args := sqlrows.InsertJobArgs(j, secrets)
	return &pendingWrite{size: argsSize(args), fn: func(ctx context.Context, tx *sql.Tx, n *notes) error {
		*e = enqueued{}
		parents := make(map[string]*sqlrows.Row, len(j.After))
		for _, id := range j.After {
			r, err := getRow(ctx, tx, id)
			if err == nil {
				parents[id] = r
			} else if !errors.Is(err, spool.ErrNotFound) {
				return err
			}
		}
		changed, err := sqlrows.AddFollower(j.After, parents, j.JobId)
		if err != nil {
			return err
		}
		res, err := tx.ExecContext(ctx, sqlrows.InsertNewJob+` ON CONFLICT DO NOTHING`, args...)
		if err != nil {
			return sqliteErr(err, "insert job")
		}
		if k, _ := res.RowsAffected(); k == 0 {
			e.job, err = repeatIn(ctx, tx, j)
			return err
		}
		for i, id := range j.After {
			if _, err := tx.ExecContext(ctx, `INSERT INTO job_after (job_id, after_id, pos) VALUES (?, ?, ?) ON CONFLICT DO NOTHING`,
				j.JobId, id, i); err != nil {
				return sqliteErr(err, "record the jobs job %s runs after", j.JobId)
			}
		}
		for _, p := range changed {
			q, args := sqlrows.WriteBook(p)
			if _, err := tx.ExecContext(ctx, q, args...); err != nil {
				return sqliteErr(err, "add job %s to the followers of job %s", j.JobId, p.JobId)
			}
			n.job(p.JobId)
		}
		e.job, e.created = j, true
		return nil
	}}
}

// repeatIn answers an enqueue of j whose insert found its request id or
// job id in use: the stored job of the request, or as storekit.NamedRepeat
// decides.
func repeatIn(ctx context.Context, tx *sql.Tx, j *spoolv1.Job) (*spoolv1.Job, error) {
	if j.RequestId != "" {
		r, err := sqlrows.ScanJob(tx.QueryRowContext(ctx, `SELECT `+sqlrows.JobCols+` FROM jobs WHERE request_id = ?`, j.RequestId))
		if err == nil {
			return r.Job, nil
		}
		if !errors.Is(err, sql.ErrNoRows) {
			return nil, sqliteErr(err, "read job of request %q", j.RequestId)
		}
	}
	r, err := getRow(ctx, tx, j.JobId)
	if err != nil {
		return nil, err
	}
	return storekit.NamedRepeat(r.Job, j)
}

// argsSize is about what a statement with args stores: its text and bytes.
func argsSize(args []any) int {
	size := 0
	for _, a := range args {
		switch v := a.(type) {
		case []byte:
			size += len(v)
		case string:
			size += len(v)
		default:
			size += 8
		}
	}
	return size
}

// maxInsertRows is the most new jobs one INSERT stores. A group's new
// jobs go in statements of powers of two rows up to it, so the writer's
// statement cache holds a few of them whatever the group's size.
const maxInsertRows = 64

// insertJobsStatements are, at index k, the INSERT of 1<<k new jobs that
// skips a row whose key is in use (its job id, its request id, its
// source's open job) and returns the ids of the rows it stored.
var insertJobsStatements = func() []string {
	var out []string
	row := "(" + strings.TrimSuffix(strings.Repeat("?, ", strings.Count(sqlrows.InsertJobCols, ",")+1), ", ") + ")"
	for n := 1; n <= maxInsertRows; n *= 2 {
		out = append(out, `INSERT INTO jobs (`+sqlrows.InsertJobCols+`) VALUES `+
			strings.TrimSuffix(strings.Repeat(row+", ", n), ", ")+` ON CONFLICT DO NOTHING RETURNING job_id`)
	}
	return out
}()

// insertJobs inserts the new jobs of a group's Enqueue writes together, a
// statement for up to maxInsertRows of them instead of a savepoint and a
// statement each, and marks the writes whose job it stored. A job whose
// key is in use is left out, as is a job that shares its id or request
// id with another of the group: its write runs on its own after, and
// answers as a lone one would (the first job of its request id, or
// ErrAlreadyExists). Should the insert fail, it is undone, and every
// write runs on its own; only a failure to undo it is returned.
func insertJobs(tx *sql.Tx, group []*pendingWrite) error {
	var (
		jobs []*pendingWrite
		keys = map[string]int{}
	)
	for _, w := range group {
		if w.job != nil {
			keys["i"+w.job.id]++
			if w.job.requestID != "" {
				keys["r"+w.job.requestID]++
			}
		}
	}
	for _, w := range group {
		if w.job != nil && keys["i"+w.job.id] == 1 && (w.job.requestID == "" || keys["r"+w.job.requestID] == 1) {
			jobs = append(jobs, w)
		}
	}
	if len(jobs) < 2 {
		return nil // a lone job is as fast on its own
	}
	ctx := context.Background()
	if _, err := tx.ExecContext(ctx, `SAVEPOINT jobs`); err != nil {
		return sqliteErr(err, "savepoint")
	}
	stored := make(map[string]bool, len(jobs))
	err := func() error {
		args := make([]any, 0, maxInsertRows*len(jobs[0].job.args))
		for rest := jobs; len(rest) > 0; {
			k := bits.Len(uint(min(len(rest), maxInsertRows))) - 1
			args = args[:0]
			for _, w := range rest[:1<<k] {
				args = append(args, w.job.args...)
			}
			rest = rest[1<<k:]
			rows, err := tx.QueryContext(ctx, insertJobsStatements[k], args...)
			if err != nil {
				return err
			}
			for rows.Next() {
				var id string
				if err := rows.Scan(&id); err != nil {
					rows.Close()
					return err
				}
				stored[id] = true
			}
			rows.Close()
			if err := rows.Err(); err != nil {
				return err
			}
		}
		return nil
	}()
	if err != nil {
		if _, err := tx.ExecContext(ctx, `ROLLBACK TO jobs`); err != nil {
			return sqliteErr(err, "roll back the insert of new jobs")
		}
		clear(stored)
	}
	if _, err := tx.ExecContext(ctx, `RELEASE jobs`); err != nil {
		return sqliteErr(err, "release savepoint")
	}
	for _, w := range jobs {
		if stored[w.job.id] {
			w.inserted = true
			w.job.stored(&w.n)
		}
	}
	return nil
}

// JobSecrets implements store.JobStore.
func (s *Store) JobSecrets(ctx context.Context, id string) ([]byte, error) {
	var b []byte
	err := s.r.QueryRowContext(ctx, sqlrows.SelectSecrets, id).Scan(&b)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, store.JobNotFound(id)
	}
	if err != nil {
		return nil, sqliteErr(err, "read the secrets of job %s", id)
	}
	return b, nil
}

// Get implements store.JobStore.
func (s *Store) Get(ctx context.Context, id string) (*spoolv1.Job, error) {
	r, err := getRow(ctx, s.r, id)
	if err != nil {
		return nil, err
	}
	return r.Job, nil
}

// List implements store.JobStore. Every listing is read from an index in
// listing order (see listQuery), so a page costs its own jobs whatever the
// filter. SQLite merges the arms of a listing by state as they come.
func (s *Store) List(ctx context.Context, f store.ListFilter) ([]*spoolv1.Job, string, error) {
	limit := store.ListLimit(f.Limit)
	q, args, err := sqlrows.ListQuery(f, limit+1)
	if err != nil {
		return nil, "", err
	}
	rows, err := s.r.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, "", sqliteErr(err, "list jobs")
	}
	defer rows.Close()
	var out []*spoolv1.Job
	for rows.Next() {
		r, err := sqlrows.ScanJob(rows)
		if err != nil {
			return nil, "", sqliteErr(err, "list jobs")
		}
		out = append(out, r.Job)
	}
	if err := rows.Err(); err != nil {
		return nil, "", sqliteErr(err, "list jobs")
	}
	out, next := sqlrows.NextCursor(out, limit)
	return out, next, nil
}

// Cancel implements store.JobStore.
func (s *Store) Cancel(ctx context.Context, id, reason string) (*spoolv1.Job, error) {
	var out *spoolv1.Job
	err := s.write(ctx, func(ctx context.Context, tx *sql.Tx, n *notes) error {
		r, err := getRow(ctx, tx, id)
		if err != nil {
			return err
		}
		now := storekit.Now()
		switch r.Job.State {
		case spoolv1.JobState_JOB_STATE_QUEUED, spoolv1.JobState_JOB_STATE_SCHEDULED:
			err = settle(ctx, tx, r, storekit.CancelBeforeStart(reason, now), false, now)
			if err == nil {
				_, err = tx.ExecContext(ctx, sqlrows.DeleteAfter, id)
			}
		case spoolv1.JobState_JOB_STATE_RUNNING:
			if !r.Job.CancelRequested {
				r.Job.CancelReason = reason
				_, err = tx.ExecContext(ctx, `UPDATE jobs SET cancel_requested = 1, book = ?, updated_at = ? WHERE job_id = ?`,
					sqlrows.Book(r.Job), now.UnixMicro(), id)
			}
		default:
			out = r.Job
			return nil
		}
		if err != nil {
			return sqliteErr(err, "cancel job %s", id)
		}
		n.job(id)
		r, err = getRow(ctx, tx, id)
		out = r.Job
		return err
	})
	return out, err
}

// settle writes a lease's outcome to the job's row (sqlrows.Settle).
func settle(ctx context.Context, tx *sql.Tx, r *sqlrows.Row, o storekit.Outcome, keepLease bool, now time.Time) error {
	q, args := sqlrows.Settle(r, o, keepLease, now)
	if _, err := tx.ExecContext(ctx, q, args...); err != nil {
		return sqliteErr(err, "settle job %s", r.Job.JobId)
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

// edit changes a job's bookkeeping with fn and writes it back, in one
// transaction; when fn changed nothing, nothing is written and nobody
// woken.
func (s *Store) edit(ctx context.Context, id string, fn sqlrows.Edit) (*spoolv1.Job, error) {
	var out *spoolv1.Job
	err := s.write(ctx, func(ctx context.Context, tx *sql.Tx, n *notes) error {
		r, err := getRow(ctx, tx, id)
		if err != nil {
			return err
		}
		out = r.Job
		if !fn(r.Job) {
			return nil
		}
		q, args := sqlrows.WriteEdit(r.Job)
		if _, err := tx.ExecContext(ctx, q, args...); err != nil {
			return sqliteErr(err, "edit job %s", id)
		}
		n.job(id)
		return nil
	})
	return out, err
}

// primaryKeyTaken reports whether err is an insert refused because a row
// with its primary key exists.
func primaryKeyTaken(err error) bool {
	var se *sqlite.Error
	return errors.As(err, &se) && se.Code() == sqlite3.SQLITE_CONSTRAINT_PRIMARYKEY
}
