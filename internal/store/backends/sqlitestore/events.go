package sqlitestore

import (
	"context"
	"database/sql"
	"errors"
	"iter"
	"strings"

	spoolv1 "github.com/spool-run/spool/gen/spool/v1"
	"github.com/spool-run/spool/internal/events"
	"github.com/spool-run/spool/internal/store"
	"github.com/spool-run/spool/internal/store/backends/sqlrows"
	"github.com/spool-run/spool/internal/store/storekit"
)

// Append implements store.JobStore: lease check, plan, repeats checked,
// items inserted and the head moved, in one transaction.
func (s *Store) Append(ctx context.Context, ref store.LeaseRef, evs []events.Published) (store.Head, error) {
	var head store.Head
	err := s.writeBare(ctx, publishedSize(evs), func(ctx context.Context, tx *sql.Tx, n *notes) error {
		r, err := appendable(ctx, tx, ref)
		if err != nil {
			return err
		}
		head, err = s.appendIn(ctx, tx, n, ref, r, evs)
		return err
	})
	if err != nil {
		return store.Head{}, err
	}
	return head, nil
}

// Finish implements store.Finisher: the events, then the result, in one
// write.
func (s *Store) Finish(ctx context.Context, ref store.LeaseRef, evs []events.Published, res *spoolv1.JobResult) (*spoolv1.Job, error) {
	var out *spoolv1.Job
	err := s.writeBare(ctx, publishedSize(evs), func(ctx context.Context, tx *sql.Tx, n *notes) error {
		r, err := getRow(ctx, tx, ref.JobID)
		if err != nil {
			return err
		}
		if repeat, err := storekit.CheckFinish(ref, r.Job.State, r.Job.Attempt, r.LeaseID); repeat || err != nil {
			out = r.Job // a repeat: the first call stored it all
			return err
		}
		if _, err := s.appendIn(ctx, tx, n, ref, r, evs); err != nil {
			return err
		}
		out, err = completeIn(ctx, tx, n, ref, res)
		return afterWrite(err) // the events may be stored
	})
	return out, err
}

// publishedSize is about what storing evs takes, for maxGroupBytes.
func publishedSize(evs []events.Published) int {
	size := 0
	for _, e := range evs {
		size += e.Size
	}
	return size
}

// appendIn appends evs to the log of r, the job ref leases, in tx.
func (s *Store) appendIn(ctx context.Context, tx *sql.Tx, n *notes, ref store.LeaseRef, r *sqlrows.Row, evs []events.Published) (store.Head, error) {
	plan, err := storekit.PlanAppend(r.Head, ref.Attempt, r.Job.GetExecutionConfig().GetBatching(), s.Limits(), evs)
	if err != nil {
		return store.Head{}, err
	}
	for _, rep := range plan.Repeats {
		var (
			end     int64
			attempt int32
		)
		err := tx.QueryRowContext(ctx, `SELECT end_seq, attempt FROM events WHERE job_id = ? AND seq = ?`, ref.JobID, rep.Sequence).Scan(&end, &attempt)
		if err != nil && !errors.Is(err, sql.ErrNoRows) {
			return store.Head{}, sqliteErr(err, "read event %d of job %s", rep.Sequence, ref.JobID)
		}
		if err := rep.Check(end, attempt, err == nil); err != nil {
			return store.Head{}, err
		}
	}
	if len(plan.Items) == 0 {
		return plan.Head, nil
	}
	// Its checks are made: from here on, a failure may leave part of the
	// write behind (afterWrite).
	if err := insertItems(ctx, tx, ref.JobID, plan.Items); err != nil {
		return store.Head{}, afterWrite(err)
	}
	if _, err := tx.ExecContext(ctx, sqlrows.MoveHead, plan.Head.NextSequence, plan.Head.NextLine, storekit.Now().UnixMicro(), ref.JobID); err != nil {
		return store.Head{}, afterWrite(sqliteErr(err, "move head of job %s", ref.JobID))
	}
	n.job(ref.JobID)
	return plan.Head, nil
}

// insertRows is how many items one INSERT stores at most: one statement for
// many rows costs the statement's own work once (binding, stepping, the
// driver's calls) instead of once a row.
const insertRows = 16

// insertStatements are the INSERTs of 1 to insertRows rows.
var insertStatements = func() []string {
	out := make([]string, insertRows+1)
	for n := 1; n <= insertRows; n++ {
		out[n] = `INSERT INTO events (job_id, seq, end_seq, seek_line, first_line, line_count, event_type, attempt, ts, payload) VALUES ` +
			strings.TrimSuffix(strings.Repeat(`(?, ?, ?, ?, ?, ?, ?, ?, ?, ?), `, n), ", ")
	}
	return out
}()

// insertItems stores items of a job's log, up to insertRows a statement:
// the whole set costs one commit, whatever its size.
func insertItems(ctx context.Context, tx *sql.Tx, jobID string, items []storekit.Item) error {
	args := make([]any, 0, 10*min(len(items), insertRows))
	for len(items) > 0 {
		n := min(len(items), insertRows)
		args = args[:0]
		for _, it := range items[:n] {
			args = append(args, jobID, it.Sequence, it.EndSequence, it.SeekLine, it.FirstLine, it.LineCount,
				int32(it.Type), it.Attempt, it.Time.UnixMilli(), it.Payload)
		}
		if _, err := tx.ExecContext(ctx, insertStatements[n], args...); err != nil {
			return sqliteErr(err, "store events %d-%d of job %s", items[0].Sequence, items[n-1].EndSequence, jobID)
		}
		items = items[n:]
	}
	return nil
}

// ReadStored implements store.JobStore. The first query seeks with the primary
// key to the item holding FromSequence (the last item starting at or before
// it: sequences have no gaps), within the query that reads the first page,
// or with events_seek_line to the first item after line FromLine-1; later
// pages continue after the last sequence read.
func (s *Store) ReadStored(ctx context.Context, req store.ReadRequest) iter.Seq2[*events.Stored, error] {
	return func(yield func(*events.Stored, error) bool) {
		from, seek := max(req.FromSequence, 1), true
		if req.FromLine > 0 {
			err := s.r.QueryRowContext(ctx, `SELECT seq FROM events WHERE job_id = ? AND seek_line >= ? ORDER BY seek_line, seq LIMIT 1`,
				req.JobID, req.FromLine).Scan(&from)
			if errors.Is(err, sql.ErrNoRows) {
				return // nothing after that line yet
			}
			if err != nil {
				yield(nil, sqliteErr(err, "seek line %d of job %s", req.FromLine, req.JobID))
				return
			}
			seek = false
		}
		sqlrows.ReadPages(req, from, func(from int64, n int) ([]*events.Stored, error) {
			page, err := s.readPage(ctx, req.JobID, from, n, seek)
			seek = false
			return page, err
		}, yield)
	}
}

// readPage reads up to n items starting at sequence from, or with seek,
// at the item that holds it.
func (s *Store) readPage(ctx context.Context, jobID string, from int64, n int, seek bool) ([]*events.Stored, error) {
	q := `SELECT ` + sqlrows.StoredColumns + ` FROM events WHERE job_id = ?1 AND seq >= ?2 ORDER BY seq LIMIT ?3`
	if seek {
		q = `SELECT ` + sqlrows.StoredColumns + ` FROM events WHERE job_id = ?1
			AND seq >= (SELECT COALESCE(MAX(seq), 0) FROM events WHERE job_id = ?1 AND seq <= ?2) ORDER BY seq LIMIT ?3`
	}
	rows, err := s.r.QueryContext(ctx, q, jobID, from, n)
	if err != nil {
		return nil, sqliteErr(err, "read events of job %s", jobID)
	}
	defer rows.Close()
	var out []*events.Stored
	for rows.Next() {
		var c sqlrows.StoredRow
		if err := rows.Scan(c.Dest()...); err != nil {
			return nil, sqliteErr(err, "read events of job %s", jobID)
		}
		out = append(out, c.Stored())
	}
	if err := rows.Err(); err != nil {
		return nil, sqliteErr(err, "read events of job %s", jobID)
	}
	return out, nil
}
