package sqlitestore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	spoolv1 "github.com/spool-run/spool/gen/spool/v1"
	"github.com/spool-run/spool/internal/store"
)

// jobCols are the columns scanJob reads, in order.
const jobCols = `job_id, queue, state, request_id, created_at, updated_at, attempt, max_attempts,
	cancel_requested, lease_id, lease_expires_at, next_sequence, next_line, params, execution, result`

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
		j                     spoolv1.Job
		state                 int32
		reqID, leaseID        sql.NullString
		created, updated      int64
		cancel                bool
		expires               sql.NullInt64
		r                     row
		params, exec, results []byte
	)
	err := sc.Scan(&j.JobId, &j.Queue, &state, &reqID, &created, &updated, &j.Attempt, &j.MaxAttempts,
		&cancel, &leaseID, &expires, &r.head.NextSequence, &r.head.NextLine, &params, &exec, &results)
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
	j := store.NewJobRecord(nj, store.Now())
	var (
		out     *spoolv1.Job
		created bool
	)
	err := s.write(ctx, func(tx *sql.Tx, n *notes) error {
		res, err := tx.ExecContext(ctx, `INSERT INTO jobs (job_id, queue, state, request_id, created_at, updated_at, max_attempts, params, execution)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (request_id) DO NOTHING`,
			j.JobId, j.Queue, int32(j.State), nullIfEmpty(j.RequestId), j.CreatedAt.AsTime().UnixMicro(), j.UpdatedAt.AsTime().UnixMicro(),
			j.MaxAttempts, marshal(j.Params), marshal(j.ExecutionConfig))
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

// List implements store.JobStore.
func (s *Store) List(ctx context.Context, f store.ListFilter) ([]*spoolv1.Job, string, error) {
	var (
		where []string
		args  []any
	)
	if f.Queue != "" {
		where, args = append(where, "queue = ?"), append(args, f.Queue)
	}
	if len(f.States) > 0 {
		ph := strings.TrimSuffix(strings.Repeat("?,", len(f.States)), ",")
		where = append(where, "state IN ("+ph+")")
		for _, st := range f.States {
			args = append(args, int32(st))
		}
	}
	if f.Cursor != "" {
		c, err := store.DecodeCursor(f.Cursor)
		if err != nil {
			return nil, "", err
		}
		t := c.CreatedAt.UnixMicro()
		where = append(where, "(created_at < ? OR (created_at = ? AND job_id < ?))")
		args = append(args, t, t, c.JobID)
	}
	q := `SELECT ` + jobCols + ` FROM jobs`
	if len(where) > 0 {
		q += " WHERE " + strings.Join(where, " AND ")
	}
	limit := store.ListLimit(f.Limit)
	q += " ORDER BY created_at DESC, job_id DESC LIMIT ?"
	args = append(args, limit+1)
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
		next = store.Cursor{CreatedAt: last.CreatedAt.AsTime(), JobID: last.JobId}.Encode()
	}
	return out, next, nil
}

// Cancel implements store.JobStore.
func (s *Store) Cancel(ctx context.Context, id, reason string) (*spoolv1.Job, error) {
	var out *spoolv1.Job
	err := s.write(ctx, func(tx *sql.Tx, n *notes) error {
		r, err := getRow(ctx, tx, id)
		if err != nil {
			return err
		}
		now := store.Now()
		switch r.job.State {
		case spoolv1.JobState_JOB_STATE_QUEUED:
			err = finish(ctx, tx, id, spoolv1.JobState_JOB_STATE_CANCELLED, store.CancelledResult(reason, now), false, now)
		case spoolv1.JobState_JOB_STATE_RUNNING:
			if !r.job.CancelRequested {
				_, err = tx.ExecContext(ctx, `UPDATE jobs SET cancel_requested = 1, updated_at = ? WHERE job_id = ?`, now.UnixMicro(), id)
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
	q := `UPDATE jobs SET state = ?, result = ?, updated_at = ?, lease_expires_at = NULL`
	if !keepLease {
		q += `, lease_id = NULL`
	}
	_, err := tx.ExecContext(ctx, q+` WHERE job_id = ?`, int32(st), marshal(res), now.UnixMicro(), id)
	return err
}
