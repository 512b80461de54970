package sqlrowstest

import (
	"context"
	"strings"
	"testing"
	"time"

	spoolv1 "github.com/spool-run/spool/gen/spool/v1"
	"github.com/spool-run/spool/internal/store"
)

// OldJob is a job row as a database from before ended_at holds it.
type OldJob struct {
	ID        string
	State     spoolv1.JobState
	UpdatedAt int64 // Unix micros
}

// OldJobs are the rows a migration test writes before migrating: one of
// each state, the final ones ended at 1000, 2000 and 3000.
var OldJobs = []OldJob{
	{"succeeded", spoolv1.JobState_JOB_STATE_SUCCEEDED, 1000},
	{"failed", spoolv1.JobState_JOB_STATE_FAILED, 2000},
	{"cancelled", spoolv1.JobState_JOB_STATE_CANCELLED, 3000},
	{"queued", spoolv1.JobState_JOB_STATE_QUEUED, 500},
	{"running", spoolv1.JobState_JOB_STATE_RUNNING, 600},
}

// InsertOldJob writes one OldJob (with ? placeholders: job_id, state,
// updated_at, then empty params and execution).
const InsertOldJob = `INSERT INTO jobs (job_id, queue, state, created_at, updated_at, max_attempts, params, execution)
	VALUES (?, 'q', ?, 1, ?, 1, ?, ?)`

// Args are InsertOldJob's arguments for j.
func (j OldJob) Args() []any { return []any{j.ID, int32(j.State), j.UpdatedAt, []byte{}, []byte{}} }

// CheckMigratedEnds checks a store opened on OldJobs after the migration:
// the final jobs' last change became their end, the others have none, and
// EndedBefore finds them by it.
func CheckMigratedEnds(t *testing.T, s store.JobStore, endedAt EndedAt) {
	t.Helper()
	for _, j := range OldJobs {
		ended, ok, err := endedAt(j.ID)
		switch final := j.State != spoolv1.JobState_JOB_STATE_QUEUED && j.State != spoolv1.JobState_JOB_STATE_RUNNING; {
		case err != nil:
			t.Fatal(err)
		case final && (!ok || ended != j.UpdatedAt):
			t.Errorf("job %s after the migration: ended_at %d (set: %v), want %d", j.ID, ended, ok, j.UpdatedAt)
		case !final && ok:
			t.Errorf("job %s after the migration: ended_at %d, want NULL", j.ID, ended)
		}
	}
	ids, err := s.EndedBefore(context.Background(), time.UnixMicro(2500), 10)
	if err != nil || strings.Join(ids, " ") != "succeeded failed" {
		t.Fatalf("EndedBefore after the migration: %v, %v; want succeeded failed", ids, err)
	}
}
