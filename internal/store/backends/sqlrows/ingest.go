package sqlrows

import (
	"strconv"
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/spool-run/spool/internal/store"
	"github.com/spool-run/spool/internal/store/storekit"
)

// How the SQL stores keep the logs of programs spool did not start: an
// external job's row has its source in the source column (NULL for every
// other job), and each event accepted for it is a row of accepted, keyed
// by (source, event_id), so an id the source stored before, for whichever
// of its jobs, is found there and dropped.

// SelectOpenJob reads the open job of a source (argument: the source), if
// it has one, searching an index of source and state, so none of the
// source's ended jobs is read. The state is written out, as it is the same
// in every call: the partial index of open jobs (WHERE state = 2) then
// serves the query whatever plan the database makes for it.
var SelectOpenJob = `SELECT ` + JobCols + ` FROM jobs WHERE source = ? AND state = ` + strconv.Itoa(int(Running))

// InsertAccepted stores one accepted event (AcceptedArgs).
const InsertAccepted = `INSERT INTO accepted (source, event_id, job_id, line, lines, grp, ts, message) VALUES (?, ?, ?, ?, ?, ?, ?, ?)`

// AcceptedArgs are InsertAccepted's arguments for a, accepted for job
// jobID of source. The message is stored as bytes: a log line may hold
// any, and a text column may refuse some (PostgreSQL refuses NUL).
func AcceptedArgs(source, jobID string, a store.Accepted) []any {
	return []any{source, a.ID, jobID, a.Line, a.Lines, a.Group, a.Time.UnixMilli(), []byte(a.Message)}
}

// AcceptedCols are the columns CollectAccepted reads, in order.
const AcceptedCols = `event_id, ts, message, line, lines, grp`

// AcceptedPage reads up to n accepted events of a job after a line, in line
// order, from the index accepted_job_line: arguments job_id, line, n.
const AcceptedPage = `SELECT ` + AcceptedCols + ` FROM accepted WHERE job_id = ? AND line > ? ORDER BY line LIMIT ?`

// AcceptedPageSize is how many accepted events one query of Accepted
// reads: a job of a million events is read a page at a time, never held
// whole.
const AcceptedPageSize = 1000

// Rows are the rows of a query: *sql.Rows and pgx.Rows.
type Rows interface {
	Scanner
	Next() bool
	Err() error
}

// CollectAccepted reads rows of AcceptedCols. The caller closes rows.
func CollectAccepted(rows Rows) ([]store.Accepted, error) {
	var out []store.Accepted
	for rows.Next() {
		var (
			a   store.Accepted
			ts  int64
			msg []byte
		)
		if err := rows.Scan(&a.ID, &ts, &msg, &a.Line, &a.Lines, &a.Group); err != nil {
			return nil, err
		}
		a.Time, a.Message = time.UnixMilli(ts).UTC(), string(msg)
		out = append(out, a)
	}
	return out, rows.Err()
}

// AcceptedPages yields a job's accepted events in line order, fetching
// AcceptedPageSize at a time with fetch (AcceptedPage), each page after
// the last line of the one before, until a short page. A page is read
// whole and then yielded, so a slow consumer holds no connection.
func AcceptedPages(fetch func(after int64, n int) ([]store.Accepted, error), yield func(store.Accepted, error) bool) {
	var after int64
	for {
		page, err := fetch(after, AcceptedPageSize)
		if err != nil {
			yield(store.Accepted{}, err)
			return
		}
		for _, a := range page {
			if !yield(a, nil) {
				return
			}
		}
		if len(page) < AcceptedPageSize {
			return
		}
		after = page[len(page)-1].Line
	}
}

// Fresh returns evs without the events whose ids are in seen (the ids the
// source has accepted before).
func Fresh(evs []store.RawEvent, seen map[string]bool) []store.RawEvent {
	fresh := make([]store.RawEvent, 0, len(evs))
	for _, e := range evs {
		if !seen[e.ID] {
			fresh = append(fresh, e)
		}
	}
	return fresh
}

// Ingest is what a call of Ingest writes, decided from what its
// transaction read.
type Ingest struct {
	// Row is the job the events go to, as it is after them (head moved,
	// updated now); nil when there is nothing to do: every event was
	// stored before and the source has no open job.
	Row *Row
	// Created says Row is new: it is inserted (InsertNewJob) first.
	Created bool
	// Items and Accepted are to be inserted, and the head then moved
	// (MoveHeadArgs); both are empty when every event was stored before.
	Items    []storekit.Item
	Accepted []store.Accepted
}

// PlanIngest decides an Ingest from the source's open job (nil: it has
// none) and the events it has not stored before: a new job from nj when
// needed, and storekit.PlanIngest's layout at the job's head.
func PlanIngest(open *Row, nj store.NewJob, fresh []store.RawEvent, lim store.Limits) (Ingest, error) {
	in := Ingest{Row: open}
	if len(fresh) == 0 {
		// Nothing new: a delivery seen before does not reopen a source.
		return in, nil
	}
	now := storekit.Now()
	if open == nil {
		in.Row = &Row{Job: storekit.NewJobRecord(nj, now), LeaseID: store.ExternalLease, Head: store.NewHead()}
		in.Created = true
	}
	plan, acc, err := storekit.PlanIngest(in.Row.Head, in.Row.Job.GetExecutionConfig().GetBatching(), lim, fresh)
	if err != nil {
		return Ingest{}, err
	}
	in.Items, in.Accepted = plan.Items, acc
	j := in.Row.Job
	in.Row.Head = plan.Head
	j.LastSequence, j.LineCount = plan.Head.NextSequence-1, plan.Head.NextLine-1
	j.UpdatedAt = timestamppb.New(now)
	return in, nil
}

// MoveHeadArgs are MoveHead's arguments for the ingest's job.
func (in Ingest) MoveHeadArgs() []any {
	return []any{in.Row.Head.NextSequence, in.Row.Head.NextLine, Micros(in.Row.Job.UpdatedAt.AsTime()), in.Row.Job.JobId}
}

// Result is what Ingest returns once the ingest is written.
func (in Ingest) Result() store.IngestResult {
	if in.Row == nil {
		return store.IngestResult{}
	}
	return store.IngestResult{Job: in.Row.Job, Created: in.Created, Accepted: len(in.Accepted)}
}

// DeleteLog deletes every item of a job's log (argument: job_id), for
// ReplaceLog to store the new ones.
const DeleteLog = `DELETE FROM events WHERE job_id = ?`
