package pgstore

import (
	"context"
	"iter"

	"github.com/jackc/pgx/v5"

	spoolv1 "github.com/spool-run/spool/gen/spool/v1"
	"github.com/spool-run/spool/internal/events"
	"github.com/spool-run/spool/internal/store"
	"github.com/spool-run/spool/internal/store/backends/sqlrows"
	"github.com/spool-run/spool/internal/store/storekit"
)

// insertItems stores a whole publish's items in one statement, one array
// per column.
const insertItems = `INSERT INTO events (job_id, seq, end_seq, seek_line, first_line, line_count, event_type, attempt, ts, payload)
	SELECT $1, * FROM unnest($2::bigint[], $3::bigint[], $4::bigint[], $5::bigint[], $6::integer[], $7::integer[], $8::integer[], $9::bigint[], $10::bytea[])`

// Append implements store.JobStore: the job's row is locked while the lease
// is checked and the publish planned; the items and the new head then go
// with the COMMIT, in one round trip.
func (s *Store) Append(ctx context.Context, ref store.LeaseRef, evs []events.Published) (store.Head, error) {
	var head store.Head
	err := s.writeRow(ctx, ref.JobID, publishedSize(evs), func(ctx context.Context, q querier, r *sqlrows.Row, w *rowWrites, n *notes) error {
		if err := storekit.CheckAppend(ref, r.Job.State, r.Job.Attempt, r.LeaseID); err != nil {
			return err
		}
		var err error
		head, err = s.appendTo(ctx, q, w, n, ref, r, evs)
		return err
	})
	if err != nil {
		return store.Head{}, err
	}
	return head, nil
}

// Finish implements store.Finisher: the events and the result go with one
// COMMIT.
func (s *Store) Finish(ctx context.Context, ref store.LeaseRef, evs []events.Published, res *spoolv1.JobResult) (*spoolv1.Job, error) {
	var out *spoolv1.Job
	err := s.writeRow(ctx, ref.JobID, publishedSize(evs), func(ctx context.Context, q querier, r *sqlrows.Row, w *rowWrites, n *notes) error {
		if repeat, err := storekit.CheckFinish(ref, r.Job.State, r.Job.Attempt, r.LeaseID); repeat || err != nil {
			out = r.Job // a repeat: the first call stored it all
			return err
		}
		head, err := s.appendTo(ctx, q, w, n, ref, r, evs)
		if err != nil {
			return err
		}
		r.Head = head
		r.Job.LastSequence, r.Job.LineCount = head.NextSequence-1, head.NextLine-1
		out, err = complete(w, n, ref, r, res)
		return err
	})
	return out, err
}

// appendTo plans the append of evs to the log of r, the locked row of the
// job ref leases, and queues its writes on w.
func (s *Store) appendTo(ctx context.Context, q querier, w *rowWrites, n *notes, ref store.LeaseRef, r *sqlrows.Row, evs []events.Published) (store.Head, error) {
	plan, err := storekit.PlanAppend(r.Head, ref.Attempt, r.Job.GetExecutionConfig().GetBatching(), s.Limits(), evs)
	if err != nil {
		return store.Head{}, err
	}
	if err := checkRepeats(ctx, q, ref.JobID, plan.Repeats); err != nil {
		return store.Head{}, err
	}
	if len(plan.Items) == 0 {
		return plan.Head, nil
	}
	queueItems(&w.Batch, ref.JobID, plan.Items)
	w.Queue(moveHead, plan.Head.NextSequence, plan.Head.NextLine, storekit.Now().UnixMicro(), ref.JobID)
	n.head(ref.JobID, plan.Head)
	return plan.Head, nil
}

// checkRepeats checks the items a publish sends again against what is
// stored (storekit.Repeat), with one query for all of them.
func checkRepeats(ctx context.Context, q querier, jobID string, reps []storekit.Repeat) error {
	if len(reps) == 0 {
		return nil
	}
	seqs := make([]int64, len(reps))
	for i, rep := range reps {
		seqs[i] = rep.Sequence
	}
	rows, err := q.Query(ctx, `SELECT seq, end_seq, attempt FROM events WHERE job_id = $1 AND seq = ANY($2)`, jobID, seqs)
	if err != nil {
		return pgErr(err, "read events of job %s", jobID)
	}
	type stored struct {
		end     int64
		attempt int32
	}
	found := map[int64]stored{}
	for rows.Next() {
		var seq int64
		var st stored
		if err := rows.Scan(&seq, &st.end, &st.attempt); err != nil {
			rows.Close()
			return pgErr(err, "read events of job %s", jobID)
		}
		found[seq] = st
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return pgErr(err, "read events of job %s", jobID)
	}
	for _, rep := range reps {
		st, ok := found[rep.Sequence]
		if err := rep.Check(st.end, st.attempt, ok); err != nil {
			return err
		}
	}
	return nil
}

// moveHead is sqlrows.MoveHead in PostgreSQL's placeholders.
var moveHead = sqlrows.Dollar(sqlrows.MoveHead)

// queueItems queues the statement that stores items of a job's log.
func queueItems(w *pgx.Batch, jobID string, items []storekit.Item) {
	cols := itemColumns(items)
	w.Queue(insertItems, jobID, cols.seq, cols.end, cols.seek, cols.first, cols.count, cols.typ, cols.attempt, cols.ts, cols.payload)
}

// columns are a publish's items as one array per column.
type columns struct {
	seq, end, seek, first, ts []int64
	count, typ, attempt       []int32
	payload                   [][]byte
}

func itemColumns(items []storekit.Item) columns {
	var c columns
	for _, it := range items {
		c.seq = append(c.seq, it.Sequence)
		c.end = append(c.end, it.EndSequence)
		c.seek = append(c.seek, it.SeekLine)
		c.first = append(c.first, it.FirstLine)
		c.count = append(c.count, int32(it.LineCount))
		c.typ = append(c.typ, int32(it.Type))
		c.attempt = append(c.attempt, it.Attempt)
		c.ts = append(c.ts, it.Time.UnixMilli())
		c.payload = append(c.payload, it.Payload)
	}
	return c
}

// ReadStored implements store.JobStore: the read starts at the item holding
// FromSequence (found by primary key within the query that reads the first
// page), or at the first item after line FromLine-1 (a query of its own on
// events_seek_line); pages follow by sequence.
func (s *Store) ReadStored(ctx context.Context, req store.ReadRequest) iter.Seq2[*events.Stored, error] {
	return func(yield func(*events.Stored, error) bool) {
		from, seek := max(req.FromSequence, 1), true
		if req.FromLine > 0 {
			err := s.pool.QueryRow(ctx, `SELECT seq FROM events WHERE job_id = $1 AND seek_line >= $2 ORDER BY seek_line, seq LIMIT 1`,
				req.JobID, req.FromLine).Scan(&from)
			if notFound(err) {
				return // nothing after that line yet
			}
			if err != nil {
				yield(nil, pgErr(err, "seek in the log of job %s", req.JobID))
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
	q := `SELECT ` + sqlrows.StoredColumns + ` FROM events WHERE job_id = $1 AND seq >= $2 ORDER BY seq LIMIT $3`
	if seek {
		q = `SELECT ` + sqlrows.StoredColumns + ` FROM events WHERE job_id = $1
			AND seq >= (SELECT COALESCE(MAX(seq), 0) FROM events WHERE job_id = $1 AND seq <= $2) ORDER BY seq LIMIT $3`
	}
	rows, err := s.pool.Query(ctx, q, jobID, from, n)
	if err != nil {
		return nil, pgErr(err, "read events of job %s", jobID)
	}
	defer rows.Close()
	var out []*events.Stored
	for rows.Next() {
		var c sqlrows.StoredRow
		if err := rows.Scan(c.Dest()...); err != nil {
			return nil, pgErr(err, "read events of job %s", jobID)
		}
		out = append(out, c.Stored())
	}
	if err := rows.Err(); err != nil {
		return nil, pgErr(err, "read events of job %s", jobID)
	}
	return out, nil
}
