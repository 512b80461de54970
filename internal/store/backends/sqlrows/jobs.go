package sqlrows

import (
	"cmp"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgtype"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	spoolv1 "github.com/spool-run/spool/gen/spool/v1"
	"github.com/spool-run/spool/internal/convert"
	"github.com/spool-run/spool/internal/store"
	"github.com/spool-run/spool/internal/store/storekit"
)

// JobCols are the columns ScanJob reads, in order.
const JobCols = `job_id, queue, state, request_id, created_at, updated_at, attempt, max_attempts,
	cancel_requested, lease_id, lease_expires_at, next_sequence, next_line, params, execution, result, retries, book, started_at,
	run_after, notify_due, priority`

// Job states as stored.
const (
	Queued    = int32(spoolv1.JobState_JOB_STATE_QUEUED)
	Running   = int32(spoolv1.JobState_JOB_STATE_RUNNING)
	Succeeded = int32(spoolv1.JobState_JOB_STATE_SUCCEEDED)
	Scheduled = int32(spoolv1.JobState_JOB_STATE_SCHEDULED)
)

// Row is a jobs row as stored: the job, and what the row holds beside it.
type Row struct {
	Job     *spoolv1.Job
	LeaseID string
	Expires time.Time
	Head    store.Head
}

// LeaseRef is the lease the row's job runs under.
func (r *Row) LeaseRef() store.LeaseRef {
	return store.LeaseRef{JobID: r.Job.JobId, Queue: r.Job.Queue, Attempt: r.Job.Attempt, LeaseID: r.LeaseID}
}

// Lease is the row's job as leased to a worker.
func (r *Row) Lease() store.Lease {
	return store.Lease{LeaseRef: r.LeaseRef(), Job: r.Job, ExpiresAt: r.Expires, Head: r.Head}
}

// scannedJob is what ScanJob makes of a row, in one allocation: the row,
// its job, the job's times, and the places its columns are scanned into
// (each passed to Scan as an interface would otherwise be an allocation of
// its own). Leases and completions scan a row per job, so this was most of
// the objects a job cost the server. The nullable columns scan into pgx's
// types, which are also database/sql Scanners: pgx fills them without
// boxing each value in an interface first, as it does for sql.Null*.
type scannedJob struct {
	row                                                     Row
	job                                                     spoolv1.Job
	created, updated, started, expires, runAfter, notifyDue timestamppb.Timestamp

	state                       int32
	reqID, leaseID              pgtype.Text
	createdUs, updatedUs        int64
	cancel                      bool
	expiresUs, startedUs        pgtype.Int8
	runAfterUs, notifyDueUs     pgtype.Int8
	params, exec, results, book []byte
}

// ScanJob reads one row of JobCols.
func ScanJob(sc Scanner) (*Row, error) {
	s := &scannedJob{}
	j, r := &s.job, &s.row
	err := sc.Scan(&j.JobId, &j.Queue, &s.state, &s.reqID, &s.createdUs, &s.updatedUs, &j.Attempt, &j.MaxAttempts,
		&s.cancel, &s.leaseID, &s.expiresUs, &r.Head.NextSequence, &r.Head.NextLine, &s.params, &s.exec, &s.results, &j.Retries, &s.book, &s.startedUs,
		&s.runAfterUs, &s.notifyDueUs, &j.Priority)
	if err != nil {
		return nil, err
	}
	j.State = spoolv1.JobState(s.state)
	j.RequestId = s.reqID.String
	j.CreatedAt = setTime(&s.created, s.createdUs)
	j.UpdatedAt = setTime(&s.updated, s.updatedUs)
	if s.startedUs.Valid {
		j.StartedAt = setTime(&s.started, s.startedUs.Int64)
	}
	j.CancelRequested = s.cancel
	j.LastSequence = r.Head.NextSequence - 1
	j.LineCount = r.Head.NextLine - 1
	j.Params, j.ExecutionConfig = &spoolv1.JobParams{}, &spoolv1.ExecutionConfig{}
	if err := proto.Unmarshal(s.params, j.Params); err != nil {
		return nil, corrupt("job", j.JobId, "params", err)
	}
	if err := proto.Unmarshal(s.exec, j.ExecutionConfig); err != nil {
		return nil, corrupt("job", j.JobId, "execution config", err)
	}
	if s.results != nil {
		j.Result = &spoolv1.JobResult{}
		if err := proto.Unmarshal(s.results, j.Result); err != nil {
			return nil, corrupt("job", j.JobId, "result", err)
		}
	}
	if s.book != nil {
		b := &spoolv1.Job{}
		if err := proto.Unmarshal(s.book, b); err != nil {
			return nil, corrupt("job", j.JobId, "bookkeeping", err)
		}
		storekit.SetBookkeeping(j, b)
	}
	// run_after, notify_due and priority are columns, which the statements
	// that promote a job, claim its webhooks or lease it by priority read
	// and write without decoding the bookkeeping: the columns are the
	// truth, whatever an older row's bookkeeping says.
	j.RunAfter, j.NotifyDue = nil, nil
	if s.runAfterUs.Valid {
		j.RunAfter = setTime(&s.runAfter, s.runAfterUs.Int64)
	}
	if s.notifyDueUs.Valid {
		j.NotifyDue = setTime(&s.notifyDue, s.notifyDueUs.Int64)
	}
	// The job lives as long as the row: the column bytes, decoded now,
	// must not live with them.
	s.params, s.exec, s.results, s.book = nil, nil, nil, nil
	r.LeaseID = s.leaseID.String
	if s.expiresUs.Valid {
		r.Expires = time.UnixMicro(s.expiresUs.Int64)
		if j.State == spoolv1.JobState_JOB_STATE_RUNNING {
			j.LeaseExpiresAt = setTime(&s.expires, s.expiresUs.Int64)
		}
	}
	r.Job = j
	return r, nil
}

// setTime sets ts to the Unix microseconds us and returns it.
func setTime(ts *timestamppb.Timestamp, us int64) *timestamppb.Timestamp {
	ts.Seconds, ts.Nanos = us/1e6, int32(us%1e6)*1000
	if ts.Nanos < 0 {
		ts.Seconds, ts.Nanos = ts.Seconds-1, ts.Nanos+1e9
	}
	return ts
}

// InsertNewJob creates a job (InsertJobArgs); a key in use (its id, its
// request id, its source's open job) is an error.
const InsertNewJob = `INSERT INTO jobs (` + InsertJobCols + `)
	VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`

// InsertJobCols are the columns InsertNewJob writes, in the order of
// InsertJobArgs.
const InsertJobCols = `job_id, queue, state, request_id, created_at, updated_at, max_attempts, params, execution, retries, result,
	attempt, lease_id, source, book, started_at, ended_at, secrets, run_after, priority, notify_due`

// InsertJob is InsertNewJob unless the job's request id is taken; then it
// does nothing, and the caller reads the first job back.
const InsertJob = InsertNewJob + ` ON CONFLICT (request_id) DO NOTHING`

// InsertJobArgs are InsertNewJob's arguments for j. A job is born with a
// result only when it is rejected (failed from the start), and running
// only when it is external: then on attempt 1 under store.ExternalLease,
// with its source and no lease expiry (NULL, which no comparison with a
// time matches, so no expiry sweep or grace ever selects it). The
// bookkeeping is written only when the job is born with some (a rerun
// names the job it runs again); an external job starts when it is
// created, every other one at its first lease. A rejected job ends as it
// is created, so it has its ended_at from the start. secrets are the job's
// sealed secrets (store.NewJob.Secrets; nil: NULL), in a column of their
// own that no read of the job selects (JobCols): only SelectSecrets does.
func InsertJobArgs(j *spoolv1.Job, secrets []byte) []any {
	var result, leaseID, source, book, started any
	if j.Result != nil {
		result = Marshal(j.Result)
	}
	if ext := j.GetParams().GetExternal(); ext != nil {
		leaseID, source = store.ExternalLease, ext.GetSource()
	}
	if b := Book(j); len(b) > 0 {
		book = b
	}
	if j.StartedAt != nil {
		started = Micros(j.StartedAt.AsTime())
	}
	return []any{j.JobId, j.Queue, int32(j.State), NullIfEmpty(j.RequestId), Micros(j.CreatedAt.AsTime()), Micros(j.UpdatedAt.AsTime()),
		j.MaxAttempts, Marshal(j.Params), Marshal(j.ExecutionConfig), j.Retries, result,
		j.Attempt, leaseID, source, book, started, EndedAt(j.State, j.UpdatedAt.AsTime()), NullIfNone(secrets),
		TimeOrNull(j.GetRunAfter()), cmp.Or(j.GetPriority(), store.DefaultPriority), TimeOrNull(j.GetNotifyDue())}
}

// Book is the job's bookkeeping as stored (storekit.Bookkeeping), less
// what has a column of its own (run_after, notify_due).
func Book(j *spoolv1.Job) []byte {
	b := storekit.Bookkeeping(j)
	b.RunAfter, b.NotifyDue = nil, nil
	return Marshal(b)
}

// TimeOrNull is a time as stored (Unix micros), or NULL when unset.
func TimeOrNull(t *timestamppb.Timestamp) any {
	if t == nil {
		return nil
	}
	return Micros(t.AsTime())
}

// NullIfNone stores no bytes as NULL.
func NullIfNone(b []byte) any {
	if len(b) == 0 {
		return nil
	}
	return b
}

// SelectSecrets reads a job's sealed secrets (store.JobStore.JobSecrets):
// argument job_id; no row is a job not found, NULL a job without secrets.
const SelectSecrets = `SELECT secrets FROM jobs WHERE job_id = ?`

// EndedAt is the ended_at a write that leaves a job in state st at now
// stores: now when st is final, else NULL. ended_at is when the job
// became final, the time retention and QueueStats count from. It is
// written only by the writes that change the state, never by the many
// that only move updated_at (a log append, a note), so those leave every
// index of the row alone: in PostgreSQL they stay heap-only (HOT)
// updates, which jobs_ended on updated_at would have prevented. A job
// that left a final state (none does today) gets NULL again, so the
// column never holds an end the job no longer has.
func EndedAt(st spoolv1.JobState, now time.Time) any {
	if !convert.State(st).IsFinal() {
		return nil
	}
	return Micros(now)
}

// MoveHead moves a job's log head after its log grew: arguments
// next_sequence, next_line, updated_at, job_id.
const MoveHead = `UPDATE jobs SET next_sequence = ?, next_line = ?, updated_at = ? WHERE job_id = ?`

// Settle applies a lease's outcome to r's job and returns the statement
// that writes it. keepLease keeps the lease handle (after a final
// Complete, so a repeat is recognised); otherwise a job leaves RUNNING
// without one. Every write that ends a job already in the store (a
// completion, an expiry, a release or a cancel that ends it) is this
// one, so it alone sets ended_at (EndedAt) besides the insert of a
// rejected job.
func Settle(r *Row, o storekit.Outcome, keepLease bool, now time.Time) (string, []any) {
	st := Settlement(r, o, keepLease, now)
	q := `UPDATE jobs SET state = ?, result = ?, book = ?, run_after = ?, updated_at = ?, ended_at = ?, notify_due = ?, lease_expires_at = NULL`
	if !keepLease {
		q += `, lease_id = NULL`
	}
	var result any // a nil []byte is not NULL to every driver
	if st.Result != nil {
		result = st.Result
	}
	return q + ` WHERE job_id = ?`, []any{st.State, result, st.Book, nullable(st.RunAfter), st.UpdatedAt,
		nullable(st.EndedAt), nullable(st.NotifyDue), st.JobID}
}

// Settled is what Settle writes to a job's row, as values, for a store
// that settles many leases in one statement. Nil fields are NULL.
type Settled struct {
	JobID     string
	State     int32
	Result    []byte
	Book      []byte
	RunAfter  *int64
	UpdatedAt int64
	EndedAt   *int64
	NotifyDue *int64
	KeepLease bool
}

// Settlement applies a lease's outcome to r's job, as Settle does, and
// returns what to write.
func Settlement(r *Row, o storekit.Outcome, keepLease bool, now time.Time) Settled {
	o.Apply(r.Job, now)
	st := Settled{JobID: r.Job.JobId, State: int32(o.State), Book: Book(r.Job), UpdatedAt: Micros(now),
		KeepLease: keepLease}
	if ra := r.Job.GetRunAfter(); ra != nil {
		st.RunAfter = new(Micros(ra.AsTime()))
	}
	if d := r.Job.GetNotifyDue(); d != nil {
		st.NotifyDue = new(Micros(d.AsTime()))
	}
	if r.Job.Result != nil {
		st.Result = Marshal(r.Job.Result)
	}
	if convert.State(o.State).IsFinal() {
		st.EndedAt = new(Micros(now))
	}
	return st
}

// nullable is v as a statement's argument: NULL when nil, whatever the
// driver makes of a typed nil.
func nullable[T any](v *T) any {
	if v == nil {
		return nil
	}
	return *v
}

// ListQuery is the query of up to n jobs of a listing, newest first. It has
// one arm per state asked for (or one for all states), each a range of an
// index in listing order (newest first in all queues, in one queue, in one
// state or of one source; or a queue or a source with a state). The arms
// are merged as they come, so no listing reads jobs it does not return, or
// sorts.
func ListQuery(f store.ListFilter, n int) (string, []any, error) {
	var where []string
	var args []any
	if f.Queue != "" {
		where, args = append(where, "queue = ?"), append(args, f.Queue)
	}
	if f.Source != "" {
		// Served by jobs_source_newest (with a state,
		// jobs_source_state_newest), whose predicate, source IS NOT
		// NULL, this term implies.
		where, args = append(where, "source = ?"), append(args, f.Source)
	}
	if f.Cursor != "" {
		c, err := storekit.DecodeCursor(f.Cursor)
		if err != nil {
			return "", nil, err
		}
		// A row value, which both databases match to the index's columns.
		where, args = append(where, "(created_at, job_id) < (?, ?)"), append(args, Micros(c.CreatedAt), c.JobID)
	}
	arm := func(where []string) string {
		q := `SELECT ` + JobCols + ` FROM jobs`
		if len(where) > 0 {
			q += " WHERE " + strings.Join(where, " AND ")
		}
		return q
	}
	states := slices.Compact(slices.Sorted(slices.Values(f.States)))
	var q string
	var qargs []any
	switch len(states) {
	case 0:
		q, qargs = arm(where), args
	default:
		arms := make([]string, len(states))
		for i, st := range states {
			arms[i] = arm(append(slices.Clip(where), "state = ?"))
			qargs = append(append(qargs, args...), int32(st))
		}
		q = strings.Join(arms, " UNION ALL ")
	}
	return q + " ORDER BY created_at DESC, job_id DESC LIMIT ?", append(qargs, n), nil
}

// NextCursor is the cursor after the last job of a page of at most limit
// jobs read with one more: out is trimmed to limit.
func NextCursor(out []*spoolv1.Job, limit int) ([]*spoolv1.Job, string) {
	if len(out) <= limit {
		return out, ""
	}
	out = out[:limit]
	last := out[limit-1]
	return out, storekit.Cursor{CreatedAt: last.CreatedAt.AsTime(), JobID: last.JobId}.Encode()
}

// An Edit changes a job's bookkeeping (storekit.Bookkeeping) and, if it
// says so, its updated_at, and reports whether it changed anything:
// nothing is written when it did not.
type Edit func(j *spoolv1.Job) bool

// AddNote is the Edit of store.JobStore.AddNote: a note is a change of the
// job's, so it moves updated_at.
func AddNote(note string) Edit {
	return func(j *spoolv1.Job) bool {
		storekit.AddNote(j, note)
		j.UpdatedAt = timestamppb.New(storekit.Now())
		return true
	}
}

// AddRerun is the Edit of store.JobStore.AddRerun. A link says what
// happened to another job, not to this one: updated_at stays. (Retention
// counts from ended_at, which no edit touches.)
func AddRerun(rerunID string) Edit {
	return func(j *spoolv1.Job) bool { return storekit.AddRerun(j, rerunID) }
}

// WriteEdit is the statement that stores an edited job's bookkeeping and
// updated_at.
func WriteEdit(j *spoolv1.Job) (string, []any) {
	return `UPDATE jobs SET book = ?, updated_at = ? WHERE job_id = ?`,
		[]any{Book(j), Micros(j.UpdatedAt.AsTime()), j.JobId}
}
