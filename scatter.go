package spool

import (
	"encoding/json"
	"fmt"
	"time"
)

// ScatterState is where a scatter is in its life: ScatterRunning and
// ScatterGathering are live, the other three final. The zero ScatterState
// is no state at all ("unspecified").
type ScatterState uint8

// The scatter states.
const (
	// ScatterRunning: batches are queued or running.
	ScatterRunning ScatterState = iota + 1
	// ScatterGathering: every batch ended within the tolerated failures;
	// the gather job runs.
	ScatterGathering
	// ScatterSucceeded: every batch ended within the tolerated failures,
	// and the gather (if any) succeeded.
	ScatterSucceeded
	// ScatterFailed: more batches failed than tolerated, or the gather
	// failed.
	ScatterFailed
	// ScatterCancelled: the scatter was cancelled.
	ScatterCancelled
)

var scatterStateNames = [...]string{"unspecified", "running", "gathering", "succeeded", "failed", "cancelled"}

// String is the state's short lower-case name ("gathering"), the one the
// command line, the REST API and the logs use.
func (s ScatterState) String() string {
	if int(s) < len(scatterStateNames) {
		return scatterStateNames[s]
	}
	return fmt.Sprintf("ScatterState(%d)", uint8(s))
}

// IsFinal reports whether a scatter in state s is over: succeeded, failed
// or cancelled.
func (s ScatterState) IsFinal() bool {
	return s == ScatterSucceeded || s == ScatterFailed || s == ScatterCancelled
}

// MarshalText is the state's name.
func (s ScatterState) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// Scatter is one run of a command over batches of items: each batch a job,
// at most Spec.MaxConcurrency at once, then an optional gather job that
// receives every batch's result.
type Scatter struct {
	// ID is the scatter's time-ordered unique id. Batch i's job is
	// "<ID>.<i>", the gather's "<ID>.gather" (see RedriveCount for a
	// scatter redriven).
	ID       string
	State    ScatterState
	Spec     ScatterSpec
	Progress ScatterProgress
	// CreatedAt is when the scatter started; UpdatedAt when it last
	// changed.
	CreatedAt time.Time
	UpdatedAt time.Time
	// GatherJobID is the gather's job, once it was queued.
	GatherJobID string
	// Error says why the scatter failed or was cancelled, naming the jobs
	// of the batches that failed.
	Error string
	// FailedJobIDs are the jobs of the batches that failed (or were
	// cancelled while the scatter ran), the first 20 in the order they
	// ended: where to look for why ("spool logs ID"). A redrive empties it.
	FailedJobIDs []string
	// RedriveCount is how many times the scatter was redriven: after
	// redrive n, batch i's job, if it ran again, is "<ID>.<i>.r<n>", and the
	// gather's "<ID>.gather.r<n>".
	RedriveCount int
	// Reading is how far the server has read the items, for a scatter
	// whose spec has a Source (nil otherwise).
	Reading *ScatterReading
	// ResultManifest is the "s3://bucket/key" of the manifest of the
	// results written under Spec.Results, once written.
	ResultManifest string
}

// ScatterSpec is what a scatter runs, fixed when it starts.
type ScatterSpec struct {
	// Queue is every batch job's queue (and the gather's).
	Queue string
	// Params is what each batch runs, with the batch's input document on
	// stdin and in $SPOOL_BATCH_FILE.
	Params JobParams
	// MaxAttempts and Retries apply to each batch job, as to any job.
	MaxAttempts int
	Retries     int
	// BatchInput is given to every batch and the gather (nil: {}).
	BatchInput json.RawMessage
	// MaxConcurrency bounds the batches queued or running at once (0: no
	// limit).
	MaxConcurrency int
	// ToleratedFailureCount and ToleratedFailurePercentage (0 to 100) are
	// the failed batches allowed before the scatter fails; with neither
	// set, none is.
	ToleratedFailureCount      *int
	ToleratedFailurePercentage *float32
	// Gather runs once every batch has ended within tolerance, with every
	// batch's result on stdin (nil: no gather).
	Gather *JobParams
	// Source is where the server reads the items, for a scatter whose
	// client sent no batches (nil: the client sent them).
	Source *ScatterSource
	// Results is the "s3://bucket/prefix/" every batch's result and a
	// manifest are written under ("": none).
	Results string
}

// ScatterSource is a scatter's items in S3, read by the server, and how
// it cuts them into batches (the rules of package itembatch).
type ScatterSource struct {
	// Items is one object of items, "s3://bucket/key": JSON Lines, a JSON
	// array or CSV. ItemsPrefix is "s3://bucket/prefix/", whose objects
	// are the items, one each: {"Etag", "Key", "LastModified", "Size",
	// "StorageClass"}, as Step Functions lists them. One of the two is
	// set.
	Items, ItemsPrefix string
	// Format is how Items is written: "json" or "csv" ("": csv for a key
	// ending in .csv, json otherwise).
	Format string
	// The batching, as itembatch.Config's MaxItems, MaxBytes, GroupBy and
	// MaxItemsPerGroup.
	MaxItemsPerBatch, MaxBytesPerBatch int
	GroupBy                            string
	MaxItemsPerGroup                   int
}

// ScatterReading is how far the server has read a scatter's source.
type ScatterReading struct {
	// Done: every item was read and is in a batch.
	Done bool
	// ItemsRead counts the items read so far.
	ItemsRead int64
	// BytesRead counts the bytes of the object read (or the objects
	// listed).
	BytesRead int64
	// Reader names the server reading, and ReaderUntil is when its claim
	// lapses unless renewed: another server then takes the reading over.
	Reader      string
	ReaderUntil time.Time
	// Etag is the ETag of the object of items when the reading began: a
	// server that takes the reading over reads that version only.
	Etag string
}

// ScatterProgress counts a scatter's batches by where they are: every
// batch is in exactly one of Waiting, Queued, Running, Succeeded, Failed
// and Cancelled.
type ScatterProgress struct {
	BatchCount int
	// Waiting batches are not handed to the queue yet (held back by
	// MaxConcurrency).
	Waiting   int
	Queued    int
	Running   int
	Succeeded int
	Failed    int
	// Cancelled batches were cancelled, or never ran because the scatter
	// failed or was cancelled.
	Cancelled int
	ItemCount int64
	// ItemsDone counts the items in batches that succeeded.
	ItemsDone int64
}

// ScatterBatch is one batch of a scatter.
type ScatterBatch struct {
	// Index is the batch's place, from 0.
	Index     int
	ItemCount int
	// Job is the batch's job: nil while the batch waits for its turn.
	Job *Job
}
