package sqlrows

import (
	"fmt"
	"strings"
	"time"

	spoolv1 "github.com/spool-run/spool/gen/spool/v1"
	"github.com/spool-run/spool/internal/convert"
	"github.com/spool-run/spool/internal/store/storekit"
)

// EndedBefore is the query of up to n final jobs that ended (ended_at)
// before t, oldest end first, and its arguments. It has one arm per final
// state: the oldest n of that state, a range of jobs_ended (state,
// ended_at) read in order from its start. The database merges the arms
// (or sorts their at most 3n rows), so a call reads about n entries of
// each state however many jobs wait to be swept, and none of the jobs
// still queued or running. Each arm has its own ORDER BY and LIMIT
// because PostgreSQL does not carry the outer ones into the arms of a
// UNION whose arms have WHERE terms; and each repeats the index's
// predicate beside its own state, because SQLite uses a partial index
// only for a query with a term that is its predicate. ended_at, not
// updated_at: a note added to a job long after it ended must not put off
// its removal.
func EndedBefore(t time.Time, n int) (string, []any) {
	var arms []string
	var args []any
	for _, st := range []spoolv1.JobState{spoolv1.JobState_JOB_STATE_SUCCEEDED, spoolv1.JobState_JOB_STATE_FAILED, spoolv1.JobState_JOB_STATE_CANCELLED} {
		arms = append(arms, fmt.Sprintf(`SELECT job_id, ended_at FROM (SELECT job_id, ended_at FROM jobs
			WHERE state IN (%s) AND state = %d AND ended_at < ? ORDER BY ended_at LIMIT ?) AS ended_%d`, FinalStates, st, st))
		args = append(args, Micros(t), n)
	}
	return strings.Join(arms, " UNION ALL ") + ` ORDER BY ended_at LIMIT ?`, append(args, n)
}

// CollectEndedBefore reads the ids of EndedBefore's rows. The caller
// closes rows.
func CollectEndedBefore(rows Rows) ([]string, error) {
	var ids []string
	for rows.Next() {
		var (
			id    string
			ended int64
		)
		if err := rows.Scan(&id, &ended); err != nil {
			return nil, err
		}
		ids = append(ids, id)
	}
	return ids, rows.Err()
}

// DeleteJob are the statements that remove a job and everything stored for
// it (each takes the job id), run in the transaction that found it final
// (Deletable): its log, its accepted events (an external job's, found by
// accepted_job_line), the jobs it was to run after (job_after: the rows
// that say other jobs run after it stay, so that they find it gone), and
// its row, with which its request id goes.
var DeleteJob = []string{
	DeleteLog,
	`DELETE FROM accepted WHERE job_id = ?`,
	`DELETE FROM job_after WHERE job_id = ?`,
	`DELETE FROM jobs WHERE job_id = ?`,
}

// Deletable refuses to delete a job that has not finished.
func Deletable(j *spoolv1.Job) error {
	if !convert.State(j.GetState()).IsFinal() {
		return storekit.NotFinished(j.GetJobId(), j.GetState())
	}
	return nil
}
