package sqlitestore

import (
	"context"
	"database/sql"
	"errors"
	"iter"
	"math/bits"
	"slices"
	"strings"

	spoolv1 "github.com/spool-run/spool/gen/spool/v1"
	"github.com/spool-run/spool/internal/store"
	"github.com/spool-run/spool/internal/store/backends/sqlrows"
	"github.com/spool-run/spool/internal/store/storekit"
)

// seenChunk bounds the ids one query asks about, well below SQLite's
// bound on a statement's parameters (32,766): a power of two, as every
// seenQuery's count of ids is.
const seenChunk = 512

// Ingest implements store.IngestStore in one write transaction: the
// source's open job is looked up, the ids it accepted before dropped, and
// the rest stored as sqlrows.PlanIngest decides. Writes are serialized on
// the one writer connection, so nothing can come between the lookup and
// the insert: two calls for one source never both create a job.
func (s *Store) Ingest(ctx context.Context, req store.IngestRequest) (store.IngestResult, error) {
	if err := storekit.CheckIngest(req); err != nil {
		return store.IngestResult{}, err
	}
	var in sqlrows.Ingest
	err := s.write(ctx, func(ctx context.Context, tx *sql.Tx, n *notes) error {
		open, err := sqlrows.ScanJob(tx.QueryRowContext(ctx, sqlrows.SelectOpenJob, req.Source))
		if errors.Is(err, sql.ErrNoRows) {
			open, err = nil, nil
		}
		if err != nil {
			return sqliteErr(err, "find the open job of source %q", req.Source)
		}
		seen, err := seenIDs(ctx, tx, req.Source, req.Events)
		if err != nil {
			return err
		}
		in, err = sqlrows.PlanIngest(open, req.Job, sqlrows.Fresh(req.Events, seen), s.Limits())
		if err != nil || len(in.Items) == 0 {
			return err
		}
		id := in.Row.Job.JobId
		if in.Created {
			if _, err := tx.ExecContext(ctx, sqlrows.InsertNewJob, sqlrows.InsertJobArgs(in.Row.Job, nil)...); err != nil {
				return sqliteErr(err, "create the job of source %q", req.Source)
			}
		}
		if err := insertItems(ctx, tx, id, in.Items); err != nil {
			return err
		}
		ins, err := tx.PrepareContext(ctx, sqlrows.InsertAccepted)
		if err != nil {
			return sqliteErr(err, "store accepted events of job %s", id)
		}
		defer ins.Close()
		for _, a := range in.Accepted {
			if _, err := ins.ExecContext(ctx, sqlrows.AcceptedArgs(req.Source, id, a)...); err != nil {
				return sqliteErr(err, "store accepted event %q of job %s", a.ID, id)
			}
		}
		if _, err := tx.ExecContext(ctx, sqlrows.MoveHead, in.MoveHeadArgs()...); err != nil {
			return sqliteErr(err, "move head of job %s", id)
		}
		n.job(id)
		return nil
	})
	if err != nil {
		return store.IngestResult{}, err
	}
	return in.Result(), nil
}

// seenIDs returns the ids of evs that source has accepted before, asking
// seenChunk ids at a time (each a search of the primary key).
func seenIDs(ctx context.Context, tx *sql.Tx, source string, evs []store.RawEvent) (map[string]bool, error) {
	seen := map[string]bool{}
	for chunk := range slices.Chunk(evs, seenChunk) {
		n := seenSize(len(chunk))
		args := make([]any, 0, 1+n)
		args = append(args, source)
		for _, e := range chunk {
			args = append(args, e.ID)
		}
		for len(args) < 1+n {
			args = append(args, chunk[len(chunk)-1].ID) // asked twice, found once
		}
		rows, err := tx.QueryContext(ctx, seenQuery(n), args...)
		if err != nil {
			return nil, sqliteErr(err, "look up accepted events of source %q", source)
		}
		for rows.Next() {
			var id string
			if err := rows.Scan(&id); err != nil {
				rows.Close()
				return nil, sqliteErr(err, "look up accepted events of source %q", source)
			}
			seen[id] = true
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return nil, sqliteErr(err, "look up accepted events of source %q", source)
		}
	}
	return seen, nil
}

// seenSize is the count of ids a query asks about for n ids: the power of
// two at or above n, the rest filled with an id asked already. The writer
// keeps every statement it runs compiled (stmtcache.go), up to a bound,
// by its text; one statement per count of ids, 1 to seenChunk, would fill
// that cache with lookups used once, and leave every statement after them
// compiled anew each time. Powers of two make ten statements of them.
func seenSize(n int) int { return 1 << bits.Len(uint(n-1)) }

// seenQuery asks which of n ids a source has accepted: arguments the
// source, then the ids.
func seenQuery(n int) string {
	return `SELECT event_id FROM accepted WHERE source = ? AND event_id IN (?` + strings.Repeat(", ?", n-1) + `)`
}

// Accepted implements store.IngestStore, a page at a time
// (sqlrows.AcceptedPages), from the reader pool.
func (s *Store) Accepted(ctx context.Context, jobID string) iter.Seq2[store.Accepted, error] {
	return func(yield func(store.Accepted, error) bool) {
		sqlrows.AcceptedPages(func(after int64, n int) ([]store.Accepted, error) {
			rows, err := s.r.QueryContext(ctx, sqlrows.AcceptedPage, jobID, after, n)
			if err != nil {
				return nil, sqliteErr(err, "read accepted events of job %s", jobID)
			}
			defer rows.Close()
			page, err := sqlrows.CollectAccepted(rows)
			if err != nil {
				return nil, sqliteErr(err, "read accepted events of job %s", jobID)
			}
			return page, nil
		}, yield)
	}
}

// ReplaceLog implements store.IngestStore: the job's items are deleted and
// evs stored in their place, in one transaction; the head does not move.
func (s *Store) ReplaceLog(ctx context.Context, jobID string, evs []*spoolv1.JobEvent) error {
	items, err := storekit.StoredItems(evs, s.Limits())
	if err != nil {
		return err
	}
	return s.write(ctx, func(ctx context.Context, tx *sql.Tx, n *notes) error {
		r, err := getRow(ctx, tx, jobID)
		if err != nil {
			return err
		}
		if err := storekit.CheckReplace(r.Job); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, sqlrows.DeleteLog, jobID); err != nil {
			return sqliteErr(err, "clear the log of job %s", jobID)
		}
		if err := insertItems(ctx, tx, jobID, items); err != nil {
			return err
		}
		n.job(jobID)
		return nil
	})
}
