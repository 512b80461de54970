// Package jobjson is the one JSON shape of a job, which the REST API
// serves and the command line prints with --json, so that a script reads
// the same fields, state names and numbers from either.
package jobjson

import (
	"encoding/json"
	"time"

	"github.com/spool-run/spool"
)

// Job is a job as spool shows it in JSON (schema Job in the REST API's
// openapi.yaml). It is a view of spool.Job with plain names: states are
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
	RerunOf          string    `json:"rerun_of,omitempty"`
	Reruns           []string  `json:"reruns,omitempty"`
	Attempt          int32     `json:"attempt"`
	MaxAttempts      int32     `json:"max_attempts"`
	CancelRequested  bool      `json:"cancel_requested"`
	LineCount        int64     `json:"line_count"`
	LastSequence     int64     `json:"last_sequence"`
	RequestID        string    `json:"request_id,omitempty"`
	LeaseExpiresAt   time.Time `json:"lease_expires_at,omitzero"`
	Retries          int32     `json:"retries"`
	RetriedAttempts  int32     `json:"retried_attempts"`
	ReleasedAttempts int32     `json:"released_attempts"`
	// RunAfter is, while the job is scheduled, when it is queued.
	RunAfter time.Time `json:"run_after,omitzero"`
	// Priority is 1 (first) to 4.
	Priority int32 `json:"priority,omitempty"`
	// After are the jobs this one runs after; Followers those that run
	// after it.
	After     []string `json:"after,omitempty"`
	Followers []string `json:"followers,omitempty"`
	// Schedule is the schedule whose tick made the job.
	Schedule string `json:"schedule,omitempty"`
	// Notify are the URLs told of the job's end; Deliveries each try to
	// tell them, oldest first; NotifyDue when the next is due.
	Notify       []string   `json:"notify,omitempty"`
	Deliveries   []Delivery `json:"deliveries,omitempty"`
	NotifyDue    time.Time  `json:"notify_due,omitzero"`
	CancelReason string     `json:"cancel_reason,omitempty"`
	Notes        []string   `json:"notes,omitempty"`
	Params       JobParams  `json:"params"`
	Result       *JobResult `json:"result,omitempty"`
}

// Delivery is one POST of a job's end to one of its notify URLs.
type Delivery struct {
	DeliveryID  string    `json:"delivery_id"`
	URL         string    `json:"url"`
	Try         int32     `json:"try"`
	At          time.Time `json:"at"`
	Status      int32     `json:"status"`
	Error       string    `json:"error,omitempty"`
	TookSeconds float64   `json:"took_seconds"`
	Delivered   bool      `json:"delivered"`
	GivenUp     bool      `json:"given_up,omitempty"`
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
	// StdinSize is the size of a stdin kept beside the job, too large
	// for its record (0: none).
	StdinSize int64 `json:"stdin_size,omitempty"`
	// PTY runs the command on a pseudo-terminal (stdout and stderr are
	// then one stream).
	PTY bool `json:"pty,omitempty"`
	// Scatter is set on a scatter's jobs: which batch, or the gather.
	Scatter *ScatterMember `json:"scatter,omitempty"`
	// Batching is the job's own batching of its output, when it asked
	// for one.
	Batching *Batching `json:"batching,omitempty"`
	// Artifacts are the globs of files the job keeps once its command
	// ends.
	Artifacts []string `json:"artifacts,omitempty"`
}

// Batching is a job's own batching of its output: what a job shows it
// asked for, and what POST /api/v1/jobs/batch takes.
type Batching struct {
	// FlushIntervalSeconds may be a fraction (0.2: every 200ms).
	FlushIntervalSeconds float64 `json:"flush_interval_seconds,omitempty"`
	MaxBatchSize         int32   `json:"max_batch_size,omitempty"`
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
func ListView(jobs []*spool.Job, nextCursor string) List {
	l := List{Jobs: make([]Job, len(jobs)), NextCursor: nextCursor}
	for i, j := range jobs {
		l.Jobs[i] = View(j)
	}
	return l
}

// View is job j as JSON shows it.
func View(j *spool.Job) Job {
	p := j.Params
	v := Job{
		JobID:            j.ID,
		Kind:             Kind(j),
		Queue:            j.Queue,
		State:            j.State.String(),
		CreatedAt:        utc(j.CreatedAt),
		UpdatedAt:        utc(j.UpdatedAt),
		StartedAt:        utc(j.StartedAt),
		RerunOf:          j.RerunOf,
		Reruns:           j.Reruns,
		Attempt:          int32(j.Attempt),
		Retries:          int32(j.Retries),
		RetriedAttempts:  int32(j.RetriedAttempts),
		ReleasedAttempts: int32(j.ReleasedAttempts),
		RunAfter:         utc(j.RunAfter),
		Priority:         int32(j.Priority),
		After:            j.After,
		Followers:        j.Followers,
		Schedule:         j.Schedule,
		Notify:           j.Notify,
		NotifyDue:        utc(j.NotifyDue),
		CancelReason:     j.CancelReason,
		Notes:            j.Notes,
		MaxAttempts:      int32(j.MaxAttempts),
		CancelRequested:  j.CancelRequested,
		LineCount:        j.LineCount,
		LastSequence:     j.LastSequence,
		RequestID:        j.RequestID,
		LeaseExpiresAt:   utc(j.LeaseExpiresAt),
		Params:           paramsView(p),
	}
	if p.External != nil {
		v.Source = p.External.Source
	}
	for _, d := range j.Deliveries {
		v.Deliveries = append(v.Deliveries, Delivery{DeliveryID: d.ID, URL: d.URL, Try: int32(d.Try), At: utc(d.At),
			Status: int32(d.Status), Error: d.Error, TookSeconds: d.Took.Seconds(), Delivered: d.Delivered, GivenUp: d.GivenUp})
	}
	if r := j.Result; r != nil {
		v.Result = &JobResult{
			ExitCode:   int32(r.ExitCode),
			Error:      r.Error,
			StartedAt:  utc(r.StartedAt),
			FinishedAt: utc(r.FinishedAt),
			Attempt:    int32(r.Attempt),
			Output:     r.Output,
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
func Kind(j *spool.Job) string {
	if j.Params.External != nil {
		return KindExternal
	}
	return KindCommand
}

// paramsView is what a job runs as JSON shows it.
func paramsView(p spool.JobParams) JobParams {
	v := JobParams{
		Argv:           p.Argv,
		Script:         p.Script,
		Env:            p.Env,
		SecretNames:    p.SecretNames,
		WorkingDir:     p.WorkingDir,
		TimeoutSeconds: p.Timeout.Seconds(),
		RepositoryURL:  p.Repository,
		Ref:            p.Ref,
		Stdin:          p.Stdin,
		StdinSize:      p.StdinSize,
		PTY:            p.PTY,
		Artifacts:      p.Artifacts,
	}
	if b := p.Batching; b != (spool.Batching{}) {
		v.Batching = &Batching{FlushIntervalSeconds: b.FlushInterval.Seconds(), MaxBatchSize: int32(b.MaxBatchSize)}
	}
	if m := p.Scatter; m != nil {
		v.Scatter = &ScatterMember{ScatterID: m.ScatterID, BatchIndex: int32(m.BatchIndex), BatchCount: int32(m.BatchCount),
			ItemCount: int32(m.ItemCount), Gather: m.Gather}
	}
	return v
}

// utc is t in UTC: the zero time stays the zero time, which JSON omits.
func utc(t time.Time) time.Time { return t.UTC() }

// Artifact is one file a job kept (GET /api/v1/jobs/{job_id}/artifacts,
// spool artifacts list --json).
type Artifact struct {
	// Path is the file's path relative to the job's directory, with "/"
	// between its parts.
	Path string `json:"path"`
	Size int64  `json:"size"`
	// SHA256 is the hex SHA-256 of the file's bytes.
	SHA256   string    `json:"sha256"`
	Modified time.Time `json:"modified"`
}

// ArtifactList is a job's artifacts, by path.
type ArtifactList struct {
	JobID     string     `json:"job_id"`
	Artifacts []Artifact `json:"artifacts"`
}
