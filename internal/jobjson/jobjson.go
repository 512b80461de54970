// Package jobjson is the one JSON shape of a job, which the REST API
// serves and the command line prints with --json, so that a script reads
// the same fields, state names and numbers from either.
package jobjson

import (
	"encoding/json"
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/spool-run/spool"
	spoolv1 "github.com/spool-run/spool/gen/spool/v1"
)

// Job is a job as spool shows it in JSON (schema Job in the REST API's
// openapi.yaml). It is a view of spoolv1.Job with plain names: states are
// lower-case words, times RFC 3339 strings, numbers numbers.
type Job struct {
	JobID string `json:"job_id"`
	// Kind is "command" (a program a worker runs) or "external" (the log
	// of a program spool did not start, sent to /api/v1/ingest).
	Kind string `json:"kind"`
	// Source is an external job's source.
	Source    string    `json:"source,omitempty"`
	Queue     string    `json:"queue"`
	State     string    `json:"state"`
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
	// StartedAt is when the current (or last) attempt was leased.
	StartedAt time.Time `json:"started_at,omitzero"`
	// RerunOf is the job this one runs again; Reruns the jobs that run
	// this one again, oldest first.
	RerunOf          string     `json:"rerun_of,omitempty"`
	Reruns           []string   `json:"reruns,omitempty"`
	Attempt          int32      `json:"attempt"`
	MaxAttempts      int32      `json:"max_attempts"`
	CancelRequested  bool       `json:"cancel_requested"`
	LineCount        int64      `json:"line_count"`
	LastSequence     int64      `json:"last_sequence"`
	RequestID        string     `json:"request_id,omitempty"`
	LeaseExpiresAt   time.Time  `json:"lease_expires_at,omitzero"`
	Retries          int32      `json:"retries"`
	RetriedAttempts  int32      `json:"retried_attempts"`
	ReleasedAttempts int32      `json:"released_attempts"`
	RunAfter         time.Time  `json:"run_after,omitzero"`
	CancelReason     string     `json:"cancel_reason,omitempty"`
	Notes            []string   `json:"notes,omitempty"`
	Params           JobParams  `json:"params"`
	Result           *JobResult `json:"result,omitempty"`
}

// JobParams is what a job runs.
type JobParams struct {
	Argv   []string          `json:"argv,omitempty"`
	Script string            `json:"script,omitempty"`
	Env    map[string]string `json:"env,omitempty"`
	// SecretNames are the names of the job's secrets; their values are
	// never shown.
	SecretNames    []string `json:"secret_names,omitempty"`
	WorkingDir     string   `json:"working_dir,omitempty"`
	TimeoutSeconds float64  `json:"timeout_seconds,omitempty"`
	RepositoryURL  string   `json:"repository_url,omitempty"`
	Ref            string   `json:"ref,omitempty"`
	// Stdin is what the command reads on its standard input, in base64.
	Stdin []byte `json:"stdin,omitempty"`
	// PTY runs the command on a pseudo-terminal (stdout and stderr are
	// then one stream).
	PTY bool `json:"pty,omitempty"`
	// Scatter is set on a scatter's jobs: which batch, or the gather.
	Scatter *ScatterMember `json:"scatter,omitempty"`
}

// ScatterMember says which part of a scatter a job is.
type ScatterMember struct {
	ScatterID  string `json:"scatter_id"`
	BatchIndex int32  `json:"batch_index"`
	BatchCount int32  `json:"batch_count"`
	ItemCount  int32  `json:"item_count,omitempty"`
	Gather     bool   `json:"gather,omitempty"`
}

// JobResult is how a finished job ended.
type JobResult struct {
	ExitCode   int32     `json:"exit_code"`
	Error      string    `json:"error,omitempty"`
	StartedAt  time.Time `json:"started_at,omitzero"`
	FinishedAt time.Time `json:"finished_at,omitzero"`
	Attempt    int32     `json:"attempt"`
	// Output is the JSON document the job left in $SPOOL_RESULT, as it was.
	Output json.RawMessage `json:"output,omitempty"`
}

// List is a page of jobs, newest first.
type List struct {
	Jobs []Job `json:"jobs"`
	// NextCursor is passed as cursor for the next page; empty on the last.
	NextCursor string `json:"next_cursor,omitempty"`
}

// ListView is a page of jobs as JSON shows it.
func ListView(jobs []*spoolv1.Job, nextCursor string) List {
	l := List{Jobs: make([]Job, len(jobs)), NextCursor: nextCursor}
	for i, j := range jobs {
		l.Jobs[i] = View(j)
	}
	return l
}

// View is job j as JSON shows it.
func View(j *spoolv1.Job) Job {
	p := j.GetParams()
	v := Job{
		JobID:            j.GetJobId(),
		Kind:             Kind(j),
		Source:           p.GetExternal().GetSource(),
		Queue:            j.GetQueue(),
		State:            spool.StateName(j.GetState()),
		CreatedAt:        timeOf(j.GetCreatedAt()),
		UpdatedAt:        timeOf(j.GetUpdatedAt()),
		StartedAt:        timeOf(j.GetStartedAt()),
		RerunOf:          j.GetRerunOf(),
		Reruns:           j.GetReruns(),
		Attempt:          j.GetAttempt(),
		Retries:          j.GetRetries(),
		RetriedAttempts:  j.GetRetriedAttempts(),
		ReleasedAttempts: j.GetReleasedAttempts(),
		RunAfter:         timeOf(j.GetRunAfter()),
		CancelReason:     j.GetCancelReason(),
		Notes:            j.GetNotes(),
		MaxAttempts:      j.GetMaxAttempts(),
		CancelRequested:  j.GetCancelRequested(),
		LineCount:        j.GetLineCount(),
		LastSequence:     j.GetLastSequence(),
		RequestID:        j.GetRequestId(),
		LeaseExpiresAt:   timeOf(j.GetLeaseExpiresAt()),
		Params:           paramsView(p),
	}
	if r := j.GetResult(); r != nil {
		v.Result = &JobResult{
			ExitCode:   r.GetExitCode(),
			Error:      r.GetError(),
			StartedAt:  timeOf(r.GetStartedAt()),
			FinishedAt: timeOf(r.GetFinishedAt()),
			Attempt:    r.GetAttempt(),
		}
		if out := r.GetOutput(); out != "" {
			v.Result.Output = json.RawMessage(out)
		}
	}
	return v
}

// The kinds of job.
const (
	KindCommand  = "command"
	KindExternal = "external"
)

// Kind is the kind of job j is.
func Kind(j *spoolv1.Job) string {
	if j.GetParams().GetExternal() != nil {
		return KindExternal
	}
	return KindCommand
}

// paramsView is what a job runs as JSON shows it.
func paramsView(p *spoolv1.JobParams) JobParams {
	v := JobParams{
		Argv:           p.GetArgv(),
		Script:         p.GetScript(),
		Env:            p.GetEnv(),
		SecretNames:    p.GetSecretNames(),
		WorkingDir:     p.GetWorkingDir(),
		TimeoutSeconds: p.GetTimeout().AsDuration().Seconds(),
		RepositoryURL:  p.GetRepositoryUrl(),
		Ref:            p.GetRef(),
		Stdin:          p.GetStdin(),
		PTY:            p.GetPty(),
	}
	if m := p.GetScatter(); m != nil {
		v.Scatter = &ScatterMember{ScatterID: m.GetScatterId(), BatchIndex: m.GetBatchIndex(), BatchCount: m.GetBatchCount(),
			ItemCount: m.GetItemCount(), Gather: m.GetGather()}
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
