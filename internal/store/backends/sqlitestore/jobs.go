package sqlitestore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	spoolv1 "github.com/spool-run/spool/gen/spool/v1"
	"github.com/spool-run/spool/internal/store"
	"github.com/spool-run/spool/internal/store/storekit"
)

// jobCols are the columns scanJob reads, in order.
const jobCols = `job_id, queue, state, request_id, created_at, updated_at, attempt, max_attempts,
	cancel_requested, lease_id, lease_expires_at, next_sequence, next_line, params, execution, result, retries, book`

// row is a jobs row as stored.
type row struct {
	job     *spoolv1.Job
	leaseID string
	expires time.Time
	head    store.Head
}

type scanner interface{ Scan(dest ...any) error }

// scanJob reads one row of jobCols.
func scanJob(sc scanner) (*row, error) {
	var (
		j                           spoolv1.Job
		state                       int32
		reqID, leaseID              sql.NullString
		created, updated            int64
		cancel                      bool
		expires                     sql.NullInt64
		r                           row
		params, exec, results, book []byte
	)
	err := sc.Scan(&j.JobId, &j.Queue, &state, &reqID, &created, &updated, &j.Attempt, &j.MaxAttempts,
		&cancel, &leaseID, &expires, &r.head.NextSequence, &r.head.NextLine, &params, &exec, &results, &j.Retries, &book)
	if err != nil {
		return nil, err
	}
	j.State = spoolv1.JobState(state)
	j.RequestId = reqID.String
	j.CreatedAt = timestamppb.New(time.UnixMicro(created))
	j.UpdatedAt = timestamppb.New(time.UnixMicro(updated))
	j.CancelRequested = cancel
	j.LastSequence = r.head.NextSequence - 1
	j.LineCount = r.head.NextLine - 1
	j.Params, j.ExecutionConfig = &spoolv1.JobParams{}, &spoolv1.ExecutionConfig{}
	if err := proto.Unmarshal(params, j.Params); err != nil {
		return nil, fmt.Errorf("job %s: corrupt params: %w", j.JobId, err)
	}
	if err := proto.Unmarshal(exec, j.ExecutionConfig); err != nil {
		return nil, fmt.Errorf("job %s: corrupt execution config: %w", j.JobId, err)
	}
	if results != nil {
		j.Result = &spoolv1.JobResult{}
		if err := proto.Unmarshal(results, j.Result); err != nil {
			return nil, fmt.Errorf("job %s: corrupt result: %w", j.JobId, err)
		}
	}
	if book != nil {
		b := &spoolv1.Job{}
		if err := proto.Unmarshal(book, b); err != nil {
			return nil, fmt.Errorf("job %s: corrupt bookkeeping: %w", j.JobId, err)
		}
		storekit.SetBookkeeping(&j, b)
	}
	r.leaseID = leaseID.String
	if expires.Valid {
		r.expires = time.UnixMicro(expires.Int64)
		if j.State == spoolv1.JobState_JOB_STATE_RUNNING {
			j.LeaseExpiresAt = timestamppb.New(r.expires)
		}
	}
	r.job = &j
	return &r, nil
}

// getRow reads a job's row with q (the writer inside a transaction, or the
// reader pool).
func getRow(ctx context.Context, q interface {
	QueryRowContext(context.Context, string, ...any) *sql.Row
}, id string) (*row, error) {
	r, err := scanJob(q.QueryRowContext(ctx, `SELECT `+jobCols+` FROM jobs WHERE job_id = ?`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, store.JobNotFound(id)
	}
	if err != nil {
		return nil, fmt.Errorf("sqlite: read job %s: %w", id, err)
	}
	return r, nil
}

func marshal(m proto.Message) []byte {
	b, _ := proto.MarshalOptions{Deterministic: true}.Marshal(m) // our own messages always marshal
	return b
}

func nullIfEmpty(s string) any {
	if s == "" {
		return nil
	}
	return s
}

// Enqueue implements store.JobStore. The request_id column is UNIQUE: the
// insert of a repeat does nothing, and the first job is read back. Writes
// are serialized on one connection, so the pair is atomic.
func (s *Store) Enqueue(ctx context.Context, nj store.NewJob) (*spoolv1.Job, bool, error) {
	if err := nj.Check(); err != nil {
		return nil, false, err
	}
	j := storekit.NewJobRecord(nj, storekit.Now())
	var (
		out     *spoolv1.Job
		created bool
	)
	err := s.write(ctx, func(tx *sql.Tx, n *notes) error {
		res, err := tx.ExecContext(ctx, `INSERT INTO jobs (job_id, queue, state, request_id, created_at, updated_at, max_attempts, params, execution, retries)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (request_id) DO NOTHING`,
			j.JobId, j.Queue, int32(j.State), nullIfEmpty(j.RequestId), j.CreatedAt.AsTime().UnixMicro(), j.UpdatedAt.AsTime().UnixMicro(),
			j.MaxAttempts, marshal(j.Params), marshal(j.ExecutionConfig), j.Retries)
		if err != nil {
			return fmt.Errorf("sqlite: insert job: %w", err)
		}
		if k, _ := res.RowsAffected(); k == 1 {
			out, created = j, true
			n.queue(j.Queue)
			return nil
		}
		r, err := scanJob(tx.QueryRowContext(ctx, `SELECT `+jobCols+` FROM jobs WHERE request_id = ?`, j.RequestId))
		if err != nil {
			return fmt.Errorf("sqlite: read job of request %q: %w", j.RequestId, err)
		}
		out = r.job
		return nil
	})
	return out, created, err
}

// Get implements store.JobStore.
func (s *Store) Get(ctx context.Context, id string) (*spoolv1.Job, error) {
	r, err := getRow(ctx, s.r, id)
	if err != nil {
		return nil, err
	}
	return r.job, nil
}

// List implements store.JobStore. Every listing is read from an index in
// listing order (see listQuery), so a page costs its own jobs whatever the
// filter.
func (s *Store) List(ctx context.Context, f store.ListFilter) ([]*spoolv1.Job, string, error) {
	limit := store.ListLimit(f.Limit)
	q, args, err := listQuery(f, limit+1)
	if err != nil {
		return nil, "", err
	}
	rows, err := s.r.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, "", fmt.Errorf("sqlite: list jobs: %w", err)
	}
	defer rows.Close()
	var out []*spoolv1.Job
	for rows.Next() {
		r, err := scanJob(rows)
		if err != nil {
			return nil, "", fmt.Errorf("sqlite: list jobs: %w", err)
		}
		out = append(out, r.job)
	}
	if err := rows.Err(); err != nil {
		return nil, "", fmt.Errorf("sqlite: list jobs: %w", err)
	}
	next := ""
	if len(out) > limit {
		out = out[:limit]
		last := out[limit-1]
		next = storekit.Cursor{CreatedAt: last.CreatedAt.AsTime(), JobID: last.JobId}.Encode()
	}
	return out, next, nil
}

// listQuery is the query of up to n jobs of a listing, newest first. It
// has one arm per state asked for (or one for all states), each a range of
// an index in listing order: jobs_newest, jobs_queue_newest, jobs_state_newest
// or jobs_ready (queue and state, read backwards). SQLite merges the arms
// as they come, so no listing reads jobs it does not return, or sorts.
func listQuery(f store.ListFilter, n int) (string, []any, error) {
	var where []string
	var args []any
	if f.Queue != "" {
		where, args = append(where, "queue = ?"), append(args, f.Queue)
	}
	if f.Cursor != "" {
		c, err := storekit.DecodeCursor(f.Cursor)
		if err != nil {
			return "", nil, err
		}
		// A row value, which SQLite matches to the index's columns.
		where, args = append(where, "(created_at, job_id) < (?, ?)"), append(args, c.CreatedAt.UnixMicro(), c.JobID)
	}
	arm := func(where []string) string {
		q := `SELECT ` + jobCols + ` FROM jobs`
		if len(where) > 0 {
			q += " WHERE " + strings.Join(where, " AND ")
		}
		return q
	}
	states := slices.Compact(slices.Sorted(slices.Values(f.States)))
	var q string
	var qargs []any
	if len(states) == 0 {
		q, qargs = arm(where), args
	} else {
		arms := make([]string, len(states))
		for i, st := range states {
			arms[i] = arm(append(slices.Clip(where), "state = ?"))
			qargs = append(append(qargs, args...), int32(st))
		}
		q = strings.Join(arms, " UNION ALL ")
	}
	return q + " ORDER BY created_at DESC, job_id DESC LIMIT ?", append(qargs, n), nil
}

// Cancel implements store.JobStore.
func (s *Store) Cancel(ctx context.Context, id, reason string) (*spoolv1.Job, error) {
	var out *spoolv1.Job
	err := s.write(ctx, func(tx *sql.Tx, n *notes) error {
		r, err := getRow(ctx, tx, id)
		if err != nil {
			return err
		}
		now := storekit.Now()
		switch r.job.State {
		case spoolv1.JobState_JOB_STATE_QUEUED:
			err = finish(ctx, tx, id, spoolv1.JobState_JOB_STATE_CANCELLED, storekit.CancelledResult(reason, now), false, now)
		case spoolv1.JobState_JOB_STATE_RUNNING:
			if !r.job.CancelRequested {
				r.job.CancelReason = reason
				_, err = tx.ExecContext(ctx, `UPDATE jobs SET cancel_requested = 1, book = ?, updated_at = ? WHERE job_id = ?`,
					marshal(storekit.Bookkeeping(r.job)), now.UnixMicro(), id)
			}
		default:
			out = r.job
			return nil
		}
		if err != nil {
			return fmt.Errorf("sqlite: cancel job %s: %w", id, err)
		}
		n.job(id)
		r, err = getRow(ctx, tx, id)
		out = r.job
		return err
	})
	return out, err
}

// finish makes a job final with res. keepLease keeps the lease handle (after
// Complete, so a repeat is recognised).
func finish(ctx context.Context, tx *sql.Tx, id string, st spoolv1.JobState, res *spoolv1.JobResult, keepLease bool, now time.Time) error {
	r, err := getRow(ctx, tx, id)
	if err != nil {
		return err
	}
	return settle(ctx, tx, r, storekit.Outcome{State: st, Result: res}, keepLease, now)
}

// settle writes a lease's outcome to the job's row. keepLease keeps the
// lease handle (after a final Complete, so a repeat is recognised);
// otherwise a job leaves RUNNING without one.
func settle(ctx context.Context, tx *sql.Tx, r *row, o storekit.Outcome, keepLease bool, now time.Time) error {
	o.Apply(r.job, now)
	var runAfter any
	if ra := r.job.GetRunAfter(); ra != nil {
		runAfter = ra.AsTime().UnixMicro()
	}
	var result any
	if r.job.Result != nil {
		result = marshal(r.job.Result)
	}
	q := `UPDATE jobs SET state = ?, result = ?, book = ?, run_after = ?, updated_at = ?, lease_expires_at = NULL`
	if !keepLease {
		q += `, lease_id = NULL`
	}
	_, err := tx.ExecContext(ctx, q+` WHERE job_id = ?`, int32(o.State), result, marshal(storekit.Bookkeeping(r.job)), runAfter, now.UnixMicro(), r.job.JobId)
	if err != nil {
		return fmt.Errorf("sqlite: settle job %s: %w", r.job.JobId, err)
	}
	return nil
}

// AddNote implements store.JobStore.
func (s *Store) AddNote(ctx context.Context, id, note string) (*spoolv1.Job, error) {
	var out *spoolv1.Job
	err := s.write(ctx, func(tx *sql.Tx, n *notes) error {
		r, err := getRow(ctx, tx, id)
		if err != nil {
			return err
		}
		storekit.AddNote(r.job, note)
		if _, err := tx.ExecContext(ctx, `UPDATE jobs SET book = ?, updated_at = ? WHERE job_id = ?`,
			marshal(storekit.Bookkeeping(r.job)), storekit.Now().UnixMicro(), id); err != nil {
			return fmt.Errorf("sqlite: add a note to job %s: %w", id, err)
		}
		n.job(id)
		out = r.job
		return nil
	})
	return out, err
}
