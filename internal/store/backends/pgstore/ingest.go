package pgstore

import (
	"context"
	"iter"

	"github.com/jackc/pgx/v5"

	spoolv1 "github.com/spool-run/spool/gen/spool/v1"
	"github.com/spool-run/spool/internal/store"
	"github.com/spool-run/spool/internal/store/backends/sqlrows"
	"github.com/spool-run/spool/internal/store/storekit"
)

// The shared statements, in PostgreSQL's placeholders. The open job is
// locked: two servers ingesting one source take turns on its row.
var (
	selectOpenJobLocked = sqlrows.Dollar(sqlrows.SelectOpenJob) + ` FOR UPDATE`
	insertNewJob        = sqlrows.Dollar(sqlrows.InsertNewJob)
	acceptedPage        = sqlrows.Dollar(sqlrows.AcceptedPage)
	deleteLog           = sqlrows.Dollar(sqlrows.DeleteLog)
)

// selectSeen asks which of a call's event ids (one array, however many)
// the source has accepted before: a search of the primary key for each.
const selectSeen = `SELECT event_id FROM accepted WHERE source = $1 AND event_id = ANY($2)`

// insertAccepted stores a call's accepted events in one statement, one
// array per column.
const insertAccepted = `INSERT INTO accepted (source, event_id, job_id, line, lines, grp, ts, message)
	SELECT $1, e, $2, l, n, g, t, m FROM unnest($3::text[], $4::bigint[], $5::bigint[], $6::bigint[], $7::bigint[], $8::bytea[]) AS u (e, l, n, g, t, m)`

// The unique indexes an ingest can lose a race on: another server
// created the source's open job (jobs_open_source), or stored one of these
// events for a job it opened and ended meanwhile (accepted_pkey). Either
// way, starting over finds what it stored.
const (
	openSourceIndex = "jobs_open_source"
	acceptedKey     = "accepted_pkey"
	ingestTries     = 5
)

// Ingest implements store.IngestStore in one transaction of two round
// trips (ingestTx). When the source has an open job, its row is locked
// first, so the ingests of one source run one after the other on every
// server, each seeing what the one before stored. When it has none, there
// is no row to lock: servers may race to create the job, and the unique
// index of open jobs lets one win; the others start over, and add to the
// winner's job.
func (s *Store) Ingest(ctx context.Context, req store.IngestRequest) (store.IngestResult, error) {
	if err := storekit.CheckIngest(req); err != nil {
		return store.IngestResult{}, err
	}
	ids := make([]string, len(req.Events))
	for i, e := range req.Events {
		ids[i] = e.ID
	}
	for try := 1; ; try++ {
		var in sqlrows.Ingest
		err := s.writeConn(ctx, "ingest source "+req.Source, func(conn *pgx.Conn, n *notes) error {
			var err error
			in, err = s.ingestTx(ctx, conn, req, ids, n)
			return err
		})
		if err == nil {
			return in.Result(), nil
		}
		if !(keyTaken(err, openSourceIndex) || keyTaken(err, acceptedKey)) || try == ingestTries {
			return store.IngestResult{}, err
		}
	}
}

// ingestTx runs one try of Ingest: BEGIN, the locked read of the source's
// open job and the lookup of the ids go in one round trip (PostgreSQL runs
// them in order, so the lookup sees whatever the lock waited for); the
// inserts, the new head and COMMIT in the second.
func (s *Store) ingestTx(ctx context.Context, conn *pgx.Conn, req store.IngestRequest, ids []string, n *notes) (sqlrows.Ingest, error) {
	read := &pgx.Batch{}
	read.Queue("BEGIN")
	read.Queue(selectOpenJobLocked, req.Source)
	read.Queue(selectSeen, req.Source, ids)
	br := conn.SendBatch(ctx, read)
	open, seen, err := readIngest(br)
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return sqlrows.Ingest{}, pgErr(err, "ingest source %q", req.Source)
	}
	in, err := sqlrows.PlanIngest(open, req.Job, sqlrows.Fresh(req.Events, seen), s.Limits())
	if err != nil {
		return sqlrows.Ingest{}, err
	}
	w := &pgx.Batch{}
	if len(in.Items) > 0 {
		id := in.Row.Job.JobId
		if in.Created {
			w.Queue(insertNewJob, sqlrows.InsertJobArgs(in.Row.Job, nil)...)
		}
		queueItems(w, id, in.Items)
		queueAccepted(w, req.Source, id, in.Accepted)
		w.Queue(moveHead, in.MoveHeadArgs()...)
		n.head(id, in.Row.Head)
	}
	if err := commitBatch(ctx, conn, w, "ingest source %q", req.Source); err != nil {
		return sqlrows.Ingest{}, err
	}
	return in, nil
}

// readIngest reads the answers of ingestTx's first round trip: the open
// job (nil: none) and the ids seen before.
func readIngest(br pgx.BatchResults) (*sqlrows.Row, map[string]bool, error) {
	if _, err := br.Exec(); err != nil {
		return nil, nil, err
	}
	open, err := sqlrows.ScanJob(br.QueryRow())
	if notFound(err) {
		open, err = nil, nil
	}
	if err != nil {
		return nil, nil, err
	}
	rows, err := br.Query()
	if err != nil {
		return nil, nil, err
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, nil, err
	}
	seen := make(map[string]bool, len(ids))
	for _, id := range ids {
		seen[id] = true
	}
	return open, seen, nil
}

// queueAccepted queues the statement that stores accepted events of a job
// (the columns of sqlrows.AcceptedArgs).
func queueAccepted(w *pgx.Batch, source, jobID string, acc []store.Accepted) {
	var (
		ids                  = make([]string, len(acc))
		line, lines, grp, ts = make([]int64, len(acc)), make([]int64, len(acc)), make([]int64, len(acc)), make([]int64, len(acc))
		msg                  = make([][]byte, len(acc))
	)
	for i, a := range acc {
		ids[i], line[i], lines[i], grp[i], ts[i], msg[i] = a.ID, a.Line, a.Lines, a.Group, a.Time.UnixMilli(), []byte(a.Message)
	}
	w.Queue(insertAccepted, source, jobID, ids, line, lines, grp, ts, msg)
}

// Accepted implements store.IngestStore, a page at a time
// (sqlrows.AcceptedPages).
func (s *Store) Accepted(ctx context.Context, jobID string) iter.Seq2[store.Accepted, error] {
	return func(yield func(store.Accepted, error) bool) {
		sqlrows.AcceptedPages(func(after int64, n int) ([]store.Accepted, error) {
			rows, err := s.pool.Query(ctx, acceptedPage, jobID, after, n)
			if err != nil {
				return nil, pgErr(err, "read accepted events of job %s", jobID)
			}
			defer rows.Close()
			page, err := sqlrows.CollectAccepted(rows)
			if err != nil {
				return nil, pgErr(err, "read accepted events of job %s", jobID)
			}
			return page, nil
		}, yield)
	}
}

// ReplaceLog implements store.IngestStore: with the job's row locked (so
// no ingest adds to the log meanwhile), its items are deleted and evs
// stored in their place, with the COMMIT; the head does not move. Like
// DeleteJob, it runs alone rather than holding up a group.
func (s *Store) ReplaceLog(ctx context.Context, jobID string, evs []*spoolv1.JobEvent) error {
	items, err := storekit.StoredItems(evs, s.Limits())
	if err != nil {
		return err
	}
	return s.writeRowAlone(ctx, jobID, func(_ context.Context, _ querier, r *sqlrows.Row, w *rowWrites, n *notes) error {
		if err := storekit.CheckReplace(r.Job); err != nil {
			return err
		}
		w.Queue(deleteLog, jobID)
		if len(items) > 0 {
			queueItems(&w.Batch, jobID, items)
		}
		n.job(jobID)
		return nil
	})
}
