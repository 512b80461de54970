package spool

import (
	"encoding/json"
	"time"
)

// Job is a command submitted to a queue, with everything known about it:
// what the client's calls return. Times are the zero time when they are
// not (or not yet) known.
type Job struct {
	// ID is the job's time-ordered unique id (a UUIDv7).
	ID    string
	Queue string
	State State
	// CreatedAt is when the job was enqueued; UpdatedAt when it last
	// changed.
	CreatedAt time.Time
	UpdatedAt time.Time
	// StartedAt is when the current attempt was leased (the last
	// attempt's, once the job is final). An external job starts when its
	// first line arrives.
	StartedAt time.Time
	// Params is what the job runs.
	Params JobParams
	// Execution is how the job's worker batches its output and how often it
	// heartbeats, fixed when the job was enqueued.
	Execution Execution
	// RequestID is the idempotency key given at enqueue, if any.
	RequestID string
	// Attempt counts the attempts started so far (0 until a worker first
	// leases the job).
	Attempt int
	// MaxAttempts is how many leases the job may be given before it fails.
	MaxAttempts int
	// Retries is how often a failing command (non-zero exit, timeout, could
	// not start) may run again; lost leases count against MaxAttempts.
	Retries int
	// RetriedAttempts are the attempts whose command failed and that were
	// retried.
	RetriedAttempts int
	// ReleasedAttempts are the attempts a stopping worker handed back: they
	// count neither against MaxAttempts nor against Retries.
	ReleasedAttempts int
	// CancelRequested: the job was cancelled while it ran; its worker
	// learns of it at its next heartbeat. CancelReason says why.
	CancelRequested bool
	CancelReason    string
	// Result is how the job ended, once it is final.
	Result *Result
	// LeaseExpiresAt is, while the job runs, when its lease runs out unless
	// its worker extends it.
	LeaseExpiresAt time.Time
	// RunAfter is, while the job is Scheduled, the time it is queued at:
	// the time a delayed job was submitted for, or the end of a retry's
	// backoff.
	RunAfter time.Time
	// Priority is 1 (first) to 4: of a queue's queued jobs, workers are
	// handed the highest priority first, the oldest first within one. 2
	// unless the job asked for another.
	Priority int
	// After are the jobs this one runs after: it stays Scheduled until
	// every one of them succeeded, and is cancelled when one fails or is
	// cancelled.
	After []string
	// Followers are the jobs that run after this one (their After names
	// it), oldest first.
	Followers []string
	// Schedule is the schedule whose tick created the job, if any.
	Schedule string
	// Notify are the URLs told when the job ends, its own and its
	// queue's: each is POSTed a signed JSON document.
	Notify []string
	// Deliveries are the POSTs made to Notify's URLs for the job's end,
	// oldest first (the newest 50 are kept).
	Deliveries []Delivery
	// NotifyDue is, while a delivery is owed, when it is next tried; zero
	// when none is (no Notify URLs, not final yet, or every URL answered
	// or was given up on).
	NotifyDue time.Time
	// LastSequence is the sequence of the last stored event (0: none).
	LastSequence int64
	// LineCount is the number of output lines stored so far.
	LineCount int64
	// Notes are what is worth knowing about the job that its log does not
	// say (retries, output a worker could not deliver), oldest first.
	Notes []string
	// RerunOf is the job this one runs again, if any; Reruns are the jobs
	// that run this one again, oldest first.
	RerunOf string
	Reruns  []string
}

// JobParams is what a job runs: Argv or Script, and where and how.
type JobParams struct {
	// Argv is the program and its arguments, run directly (no shell).
	Argv []string
	// Script is run with /bin/sh -c.
	Script string
	// Env is added to the environment the worker gives jobs.
	Env map[string]string
	// SecretNames are the names of the job's secrets, sorted. Their values
	// are never shown.
	SecretNames []string
	// WorkingDir is where the command runs: inside the checkout when
	// Repository is set, else inside the job's own directory.
	WorkingDir string
	// Timeout stops the command after this long (0: no limit).
	Timeout time.Duration
	// Repository is a git repository cloned before the command runs, at Ref
	// (its HEAD when empty).
	Repository string
	Ref        string
	// Stdin is given to the command on its standard input.
	Stdin []byte
	// StdinSize, when not 0, is the size of a stdin too large for the job
	// record, kept beside the job instead of in Stdin (the client
	// uploads such a stdin; the worker fetches it), and StdinSHA256 its
	// hex SHA-256.
	StdinSize   int64
	StdinSHA256 string
	// StdinUpload names such a stdin uploaded ahead of the job, in a
	// request to enqueue it; the server replaces it with StdinSize, so a
	// stored job never has it. The client sets it itself (see
	// client.SubmitParams.StdinFrom).
	StdinUpload string
	// PTY runs the command on a pseudo-terminal: its stdout and stderr are
	// then one stream, recorded as stdout.
	PTY bool
	// Scatter is set on the jobs of a scatter: which batch the job runs, or
	// that it is the scatter's gather.
	Scatter *ScatterMember
	// External is set on the jobs that hold the logs of programs spool did
	// not start: such a job runs nothing.
	External *External
	// Batching is how the job asked its output to be batched; its zero
	// fields take the server's. What the worker follows, the server's
	// defaults filled in, is the job's Execution.
	Batching Batching
	// Artifacts are globs (** for any depth) of files, relative to the
	// job's directory, that the worker keeps as the job's artifacts once
	// the command ends, whatever its exit code.
	Artifacts []string
}

// Batching is a job's own batching of its output, within the bounds the
// server sets for jobs (a request beyond them is refused with
// ErrInvalidArgument, naming the bound).
type Batching struct {
	// FlushInterval is the longest the worker holds output before sending
	// it: short for output someone wants to see at once, long for fewer
	// writes. It may be under a second.
	FlushInterval time.Duration
	// MaxBatchSize is the most lines of output in one stored batch.
	MaxBatchSize int
}

// External says where an external job's log comes from.
type External struct {
	// Source is "<logGroup>:<logStream>" for CloudWatch Logs, or the
	// "source" a log shipper sent.
	Source string
}

// ScatterMember says which part of a scatter a job is.
type ScatterMember struct {
	ScatterID string
	// BatchIndex is the batch the job runs, from 0 (0 also for the gather).
	BatchIndex int
	// BatchCount is the number of batches of the scatter.
	BatchCount int
	// ItemCount is the number of items in the batch (0 for the gather).
	ItemCount int
	// Gather: the job is the scatter's gather, run once every batch ended.
	Gather bool
}

// Execution is the server's part of how a job runs, chosen when it was
// enqueued and kept with it.
type Execution struct {
	// FlushInterval is the longest the worker holds output before sending
	// it.
	FlushInterval time.Duration
	// MaxBatchSize and MaxBatchBytes bound the lines and bytes of output in
	// one stored batch.
	MaxBatchSize  int
	MaxBatchBytes int64
	// PlaybackInterval spaces replayed lines that carry no times.
	PlaybackInterval time.Duration
	// HeartbeatInterval is how often the worker renews the job's lease.
	HeartbeatInterval time.Duration
}

// Result is how a finished job ended.
type Result struct {
	// ExitCode is the command's exit status; -1 if it never ran or was
	// killed by a signal.
	ExitCode int
	// Error says why the job failed apart from its exit status (could not
	// start, timed out, cancelled, lost its lease too often); empty on
	// success.
	Error      string
	StartedAt  time.Time
	FinishedAt time.Time
	// Attempt is the attempt that produced the result.
	Attempt int
	// Output is the JSON document the job left in $SPOOL_RESULT (a scatter
	// batch's result), or nil.
	Output json.RawMessage
}

// Delivery is one POST of a job's end to one of its Notify URLs.
type Delivery struct {
	// ID is the same for every try of one URL for one end (the
	// Spool-Delivery header): a receiver drops a repeat by it.
	ID  string
	URL string
	// Try counts the tries of the URL, from 1.
	Try int
	At  time.Time
	// Status is the HTTP status the receiver answered (0 when it gave
	// none: Error says why).
	Status int
	// Error says what went wrong: a refused connection, a timeout, a
	// status other than 2xx. Empty when it was delivered.
	Error string
	// Took is how long the receiver took to answer.
	Took time.Duration
	// Delivered: it answered 2xx, so the URL is told.
	Delivered bool
	// GivenUp: the last try; the URL failed for a day and is told no
	// more.
	GivenUp bool
}
