package sqlrows

import (
	"fmt"
	"maps"
	"slices"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/spool-run/spool"
	spoolv1 "github.com/spool-run/spool/gen/spool/v1"
	"github.com/spool-run/spool/internal/apierr"
	"github.com/spool-run/spool/internal/store"
	"github.com/spool-run/spool/internal/store/storekit"
)

// How the SQL stores keep SCHEDULED jobs, the jobs they run after, the
// schedules and the webhook outbox. The statements write the states they
// search by into their text: both databases use a partial index
// (jobs_scheduled, jobs_queued) only for a statement whose own terms imply
// its predicate.

// WaitsForAfter is the term of a job (of the table jobs) that still has
// jobs to run after: it has rows in job_after.
const WaitsForAfter = `EXISTS (SELECT 1 FROM job_after a WHERE a.job_id = jobs.job_id)`

// NextScheduled is the query of the earliest run_after after a time
// (argument: now) of the SCHEDULED jobs that wait only for their time:
// the first entry of jobs_scheduled past now that has no job to run after.
var NextScheduled = fmt.Sprintf(`SELECT run_after FROM jobs WHERE state = %d AND run_after > ? AND NOT %s
	ORDER BY run_after LIMIT 1`, Scheduled, WaitsForAfter)

// WaitingFollowers is the query of the SCHEDULED jobs whose wait for other
// jobs is decided: every job they run after succeeded, or one failed, was
// cancelled or is gone (state 0 here). A row per job run after, in the
// follower's order: follower, job run after, its state, the follower's
// run_after. It reads job_after whole, which holds the rows of the jobs
// still waiting for others and no more.
var WaitingFollowers = fmt.Sprintf(`SELECT a.job_id, a.after_id, COALESCE(p.state, 0), f.run_after FROM job_after a
	JOIN jobs f ON f.job_id = a.job_id
	LEFT JOIN jobs p ON p.job_id = a.after_id
	WHERE f.state = %[1]d AND a.job_id IN (
		SELECT a2.job_id FROM job_after a2 LEFT JOIN jobs p2 ON p2.job_id = a2.after_id
		GROUP BY a2.job_id
		HAVING sum(CASE WHEN COALESCE(p2.state, 0) = %[2]d THEN 0 ELSE 1 END) = 0
			OR sum(CASE WHEN COALESCE(p2.state, 0) IN (0, %[3]d, %[4]d) THEN 1 ELSE 0 END) > 0)
	ORDER BY a.job_id, a.pos`, Scheduled, Succeeded, spoolv1.JobState_JOB_STATE_FAILED, spoolv1.JobState_JOB_STATE_CANCELLED)

// DeleteAfter removes a job's rows of job_after (argument: job_id): it no
// longer waits for other jobs.
const DeleteAfter = `DELETE FROM job_after WHERE job_id = ?`

// Follower is a SCHEDULED job whose wait for others is decided, read
// from WaitingFollowers.
type Follower struct {
	JobID string
	// Wait is WaitDone (queue it, if its time came) or WaitBroken (cancel
	// it with Outcome).
	Wait storekit.Waiting
	// Outcome cancels the job (storekit.AfterFailed), when Wait is
	// WaitBroken.
	Outcome storekit.Outcome
}

// Followers decides the followers of WaitingFollowers's rows at now, as
// storekit.Decide does. A follower whose time has not come is left out.
// The caller closes rows.
func Followers(rows Rows, now time.Time) ([]Follower, error) {
	type waiting struct {
		job     *spoolv1.Job
		parents map[string]*spoolv1.Job
	}
	byID := map[string]*waiting{}
	var order []string
	for rows.Next() {
		var (
			id, after string
			state     int32
			runAfter  *int64
		)
		if err := rows.Scan(&id, &after, &state, &runAfter); err != nil {
			return nil, err
		}
		w := byID[id]
		if w == nil {
			w = &waiting{job: &spoolv1.Job{JobId: id, State: spoolv1.JobState_JOB_STATE_SCHEDULED}, parents: map[string]*spoolv1.Job{}}
			if runAfter != nil {
				w.job.RunAfter = timestamppb.New(time.UnixMicro(*runAfter))
			}
			byID[id] = w
			order = append(order, id)
		}
		w.job.After = append(w.job.After, after)
		if state != 0 {
			w.parents[after] = &spoolv1.Job{JobId: after, State: spoolv1.JobState(state)}
		}
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	var out []Follower
	for _, id := range order {
		w := byID[id]
		switch wait, broken := storekit.Decide(w.job, w.parents, now); wait {
		case storekit.WaitDone:
			out = append(out, Follower{JobID: id, Wait: wait})
		case storekit.WaitBroken:
			out = append(out, Follower{JobID: id, Wait: wait, Outcome: storekit.AfterFailed(broken, w.parents[broken], now)})
		}
	}
	return out, nil
}

// Split is the ids of followers to queue and those to cancel, and the
// outcome of each of the latter.
func Split(fs []Follower) (queue, cancel []string, outcomes map[string]storekit.Outcome) {
	outcomes = map[string]storekit.Outcome{}
	for _, f := range fs {
		if f.Wait == storekit.WaitDone {
			queue = append(queue, f.JobID)
		} else {
			cancel = append(cancel, f.JobID)
			outcomes[f.JobID] = f.Outcome
		}
	}
	return queue, cancel, outcomes
}

// AddFollower records followerID on each of the jobs it runs after
// (parents, read by id, locked) and returns those that changed, to write
// with WriteBook; a job of after missing from parents is
// store.AfterNotFound.
func AddFollower(after []string, parents map[string]*Row, followerID string) ([]*spoolv1.Job, error) {
	var changed []*spoolv1.Job
	for _, id := range after {
		p := parents[id]
		if p == nil {
			return nil, store.AfterNotFound(id)
		}
		if storekit.AddFollower(p.Job, followerID) {
			changed = append(changed, p.Job)
		}
	}
	return changed, nil
}

// WriteBook is the statement that stores a job's bookkeeping alone: a
// change that says what happened to another job (a follower added) moves
// nothing else.
func WriteBook(j *spoolv1.Job) (string, []any) {
	return `UPDATE jobs SET book = ? WHERE job_id = ?`, []any{Book(j), j.JobId}
}

// AfterPositions are the positions of the jobs a job runs after, for
// job_after's pos.
func AfterPositions(after []string) []int32 {
	pos := make([]int32, len(after))
	for i := range pos {
		pos[i] = int32(i)
	}
	return pos
}

// Schedules' statements.
const (
	InsertSchedule = `INSERT INTO schedules (name, revision, schedule) VALUES (?, 1, ?) ON CONFLICT (name) DO NOTHING`
	SelectSchedule = `SELECT revision, schedule FROM schedules WHERE name = ?`
	SelectAllSched = `SELECT revision, schedule FROM schedules`
	UpdateSchedule = `UPDATE schedules SET revision = revision + 1, schedule = ? WHERE name = ? AND revision = ?`
	DeleteSchedule = `DELETE FROM schedules WHERE name = ?`
	ScheduleExists = `SELECT count(*) FROM schedules WHERE name = ?`
)

// ScheduleBytes is s as stored, at revision rev.
func ScheduleBytes(s *spoolv1.Schedule, rev int64) []byte {
	c := proto.CloneOf(s)
	c.Revision = rev
	return Marshal(c)
}

// ScanSchedule reads a row of SelectSchedule.
func ScanSchedule(sc Scanner) (*spoolv1.Schedule, error) {
	var (
		rev int64
		b   []byte
	)
	if err := sc.Scan(&rev, &b); err != nil {
		return nil, err
	}
	s := &spoolv1.Schedule{}
	if err := proto.Unmarshal(b, s); err != nil {
		return nil, fmt.Errorf("a stored schedule does not decode: %w", err)
	}
	s.Revision = rev
	return s, nil
}

// CollectSchedules reads the rows of SelectAllSched, by name (byte order,
// whatever the database's collation). The caller closes rows.
func CollectSchedules(rows Rows) ([]*spoolv1.Schedule, error) {
	byName := map[string]*spoolv1.Schedule{}
	for rows.Next() {
		s, err := ScanSchedule(rows)
		if err != nil {
			return nil, err
		}
		byName[s.Name] = s
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	out := make([]*spoolv1.Schedule, 0, len(byName))
	for _, name := range slices.Sorted(maps.Keys(byName)) {
		out = append(out, byName[name])
	}
	return out, nil
}

// ScheduleTaken is CreateSchedule's error for a name in use.
func ScheduleTaken(name string) error {
	return apierr.Errorf(spool.ErrAlreadyExists, "a schedule named %q exists already", name)
}

// UpdateFailed explains an UpdateSchedule that changed no row: exists says
// whether the name is stored.
func UpdateFailed(name string, exists bool) error {
	if !exists {
		return store.ScheduleNotFound(name)
	}
	return store.ScheduleMoved(name)
}

// DueNotifications is the query of up to n jobs whose webhooks are owed
// at a time (arguments: now, n), oldest due first: a range of
// jobs_notify_due from its start (jobs due at the same moment come in the
// index's order).
const DueNotifications = `SELECT job_id, notify_due FROM jobs WHERE notify_due IS NOT NULL AND notify_due <= ? ORDER BY notify_due LIMIT ?`

// WriteDeliveries is the statement that stores a job's deliveries and
// what it owes next (storekit.AddDeliveries applied to j).
func WriteDeliveries(j *spoolv1.Job) (string, []any) {
	return `UPDATE jobs SET book = ?, notify_due = ? WHERE job_id = ?`, []any{Book(j), TimeOrNull(j.GetNotifyDue()), j.JobId}
}

// ScanPromoted reads the rows (job_id, queue) of a statement that queued
// jobs, telling job of each and queue of each queue once (the stores wake
// the jobs' watchers and the queues' polls with them), and returns how
// many jobs it read. The caller closes rows and words the error.
func ScanPromoted(rows Rows, job, queue func(string)) (int, error) {
	k := 0
	queues := map[string]bool{}
	for rows.Next() {
		var id, q string
		if err := rows.Scan(&id, &q); err != nil {
			return k, err
		}
		job(id)
		if !queues[q] {
			queues[q] = true
			queue(q)
		}
		k++
	}
	return k, rows.Err()
}
