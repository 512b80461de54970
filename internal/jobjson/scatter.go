package jobjson

import (
	"encoding/json"
	"time"

	"github.com/spool-run/spool"
	spoolv1 "github.com/spool-run/spool/gen/spool/v1"
)

// Scatter is a scatter as spool shows it in JSON (schema Scatter in the
// REST API's openapi.yaml).
type Scatter struct {
	ScatterID   string          `json:"scatter_id"`
	State       string          `json:"state"`
	Error       string          `json:"error,omitempty"`
	CreatedAt   time.Time       `json:"created_at"`
	UpdatedAt   time.Time       `json:"updated_at"`
	GatherJobID string          `json:"gather_job_id,omitempty"`
	Progress    ScatterProgress `json:"progress"`
	Spec        ScatterSpec     `json:"spec"`
}

// ScatterProgress counts a scatter's batches by where they are.
type ScatterProgress struct {
	BatchCount int32 `json:"batch_count"`
	Waiting    int32 `json:"waiting"`
	Queued     int32 `json:"queued"`
	Running    int32 `json:"running"`
	Succeeded  int32 `json:"succeeded"`
	Failed     int32 `json:"failed"`
	Cancelled  int32 `json:"cancelled"`
	ItemCount  int64 `json:"item_count"`
	ItemsDone  int64 `json:"items_done"`
}

// ScatterSpec is what a scatter runs.
type ScatterSpec struct {
	Queue                      string          `json:"queue"`
	Params                     JobParams       `json:"params"`
	MaxAttempts                int32           `json:"max_attempts"`
	Retries                    int32           `json:"retries"`
	BatchInput                 json.RawMessage `json:"batch_input"`
	MaxConcurrency             int32           `json:"max_concurrency"`
	ToleratedFailureCount      *int32          `json:"tolerated_failure_count,omitempty"`
	ToleratedFailurePercentage *float32        `json:"tolerated_failure_percentage,omitempty"`
	Gather                     *JobParams      `json:"gather,omitempty"`
}

// ScatterList is a page of scatters, newest first.
type ScatterList struct {
	Scatters   []Scatter `json:"scatters"`
	NextCursor string    `json:"next_cursor,omitempty"`
}

// ScatterBatch is one batch of a scatter, with its job once it has one.
type ScatterBatch struct {
	BatchIndex int32 `json:"batch_index"`
	ItemCount  int32 `json:"item_count,omitempty"`
	Job        *Job  `json:"job,omitempty"`
}

// ScatterBatches is a page of a scatter's batches.
type ScatterBatches struct {
	Batches []ScatterBatch `json:"batches"`
	// NextIndex is passed as from for the next page; 0 on the last.
	NextIndex int32 `json:"next_index,omitempty"`
}

// ScatterView is scatter sc as JSON shows it.
func ScatterView(sc *spoolv1.Scatter) Scatter {
	p, spec := sc.GetProgress(), sc.GetSpec()
	v := Scatter{
		ScatterID:   sc.GetScatterId(),
		State:       spool.ScatterStateName(sc.GetState()),
		Error:       sc.GetError(),
		CreatedAt:   timeOf(sc.GetCreatedAt()),
		UpdatedAt:   timeOf(sc.GetUpdatedAt()),
		GatherJobID: sc.GetGatherJobId(),
		Progress: ScatterProgress{
			BatchCount: p.GetBatchCount(), Waiting: p.GetWaiting(), Queued: p.GetQueued(), Running: p.GetRunning(),
			Succeeded: p.GetSucceeded(), Failed: p.GetFailed(), Cancelled: p.GetCancelled(),
			ItemCount: p.GetItemCount(), ItemsDone: p.GetItemsDone(),
		},
		Spec: ScatterSpec{
			Queue: spec.GetQueue(), Params: paramsView(spec.GetParams()), MaxAttempts: spec.GetMaxAttempts(), Retries: spec.GetRetries(),
			BatchInput: json.RawMessage(spec.GetBatchInput()), MaxConcurrency: spec.GetMaxConcurrency(),
			ToleratedFailureCount: spec.ToleratedFailureCount, ToleratedFailurePercentage: spec.ToleratedFailurePercentage,
		},
	}
	if len(v.Spec.BatchInput) == 0 {
		v.Spec.BatchInput = json.RawMessage("{}")
	}
	if g := spec.GetGather(); g != nil {
		gp := paramsView(g)
		v.Spec.Gather = &gp
	}
	return v
}

// ScatterListView is a page of scatters as JSON shows it.
func ScatterListView(scs []*spoolv1.Scatter, nextCursor string) ScatterList {
	l := ScatterList{Scatters: make([]Scatter, len(scs)), NextCursor: nextCursor}
	for i, sc := range scs {
		l.Scatters[i] = ScatterView(sc)
	}
	return l
}

// ScatterBatchesView is a page of batches as JSON shows it.
func ScatterBatchesView(bs []*spoolv1.ScatterBatch, next int32) ScatterBatches {
	l := ScatterBatches{Batches: make([]ScatterBatch, len(bs)), NextIndex: next}
	for i, b := range bs {
		l.Batches[i] = ScatterBatch{BatchIndex: b.GetBatchIndex(), ItemCount: b.GetItemCount()}
		if b.GetJob() != nil {
			j := View(b.GetJob())
			l.Batches[i].Job = &j
		}
	}
	return l
}
