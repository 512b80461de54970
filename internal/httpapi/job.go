package httpapi

import (
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	spoolv1 "github.com/spool-run/spool/gen/spool/v1"
	"github.com/spool-run/spool/internal/store"
)

// Job is a job as the REST API shows it (schema Job in openapi.yaml).
// It is a view of spoolv1.Job with plain names: states are lower-case
// words, times RFC 3339 strings.
type Job struct {
	JobID           string     `json:"job_id"`
	Queue           string     `json:"queue"`
	State           string     `json:"state"`
	CreatedAt       time.Time  `json:"created_at"`
	UpdatedAt       time.Time  `json:"updated_at"`
	Attempt         int32      `json:"attempt"`
	MaxAttempts     int32      `json:"max_attempts"`
	CancelRequested bool       `json:"cancel_requested"`
	LineCount       int64      `json:"line_count"`
	LastSequence    int64      `json:"last_sequence"`
	RequestID       string     `json:"request_id,omitempty"`
	LeaseExpiresAt  time.Time  `json:"lease_expires_at,omitzero"`
	Params          JobParams  `json:"params"`
	Result          *JobResult `json:"result,omitempty"`
}

// JobParams is what a job runs.
type JobParams struct {
	Argv           []string          `json:"argv,omitempty"`
	Script         string            `json:"script,omitempty"`
	Env            map[string]string `json:"env,omitempty"`
	WorkingDir     string            `json:"working_dir,omitempty"`
	TimeoutSeconds float64           `json:"timeout_seconds,omitempty"`
	RepositoryURL  string            `json:"repository_url,omitempty"`
	Ref            string            `json:"ref,omitempty"`
}

// JobResult is how a finished job ended.
type JobResult struct {
	ExitCode   int32     `json:"exit_code"`
	Error      string    `json:"error,omitempty"`
	StartedAt  time.Time `json:"started_at,omitzero"`
	FinishedAt time.Time `json:"finished_at,omitzero"`
	Attempt    int32     `json:"attempt"`
}

func jobView(j *spoolv1.Job) Job {
	p := j.GetParams()
	v := Job{
		JobID:           j.GetJobId(),
		Queue:           j.GetQueue(),
		State:           store.StateName(j.GetState()),
		CreatedAt:       timeOf(j.GetCreatedAt()),
		UpdatedAt:       timeOf(j.GetUpdatedAt()),
		Attempt:         j.GetAttempt(),
		MaxAttempts:     j.GetMaxAttempts(),
		CancelRequested: j.GetCancelRequested(),
		LineCount:       j.GetLineCount(),
		LastSequence:    j.GetLastSequence(),
		RequestID:       j.GetRequestId(),
		LeaseExpiresAt:  timeOf(j.GetLeaseExpiresAt()),
		Params: JobParams{
			Argv:           p.GetArgv(),
			Script:         p.GetScript(),
			Env:            p.GetEnv(),
			WorkingDir:     p.GetWorkingDir(),
			TimeoutSeconds: p.GetTimeout().AsDuration().Seconds(),
			RepositoryURL:  p.GetRepositoryUrl(),
			Ref:            p.GetRef(),
		},
	}
	if r := j.GetResult(); r != nil {
		v.Result = &JobResult{
			ExitCode:   r.GetExitCode(),
			Error:      r.GetError(),
			StartedAt:  timeOf(r.GetStartedAt()),
			FinishedAt: timeOf(r.GetFinishedAt()),
			Attempt:    r.GetAttempt(),
		}
	}
	return v
}

// timeOf is t in UTC, or the zero time when t is unset (omitted in JSON).
func timeOf(t *timestamppb.Timestamp) time.Time {
	if t == nil {
		return time.Time{}
	}
	return t.AsTime().UTC()
}
