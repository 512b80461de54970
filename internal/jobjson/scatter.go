package jobjson

import (
	"encoding/json"
	"time"

	"github.com/spool-run/spool"
)

// Scatter is a scatter as spool shows it in JSON (schema Scatter in the
// REST API's openapi.yaml).
type Scatter struct {
	ScatterID   string    `json:"scatter_id"`
	State       string    `json:"state"`
	Error       string    `json:"error,omitempty"`
	CreatedAt   time.Time `json:"created_at"`
	UpdatedAt   time.Time `json:"updated_at"`
	GatherJobID string    `json:"gather_job_id,omitempty"`
	// FailedJobIDs are the jobs of the first batches that failed.
	FailedJobIDs []string        `json:"failed_job_ids,omitempty"`
	RedriveCount int             `json:"redrive_count,omitempty"`
	Progress     ScatterProgress `json:"progress"`
	Spec         ScatterSpec     `json:"spec"`
	// Reading is how far the server has read the items of spec.source.
	Reading        *ScatterReading `json:"reading,omitempty"`
	ResultManifest string          `json:"result_manifest,omitempty"`
}

// ScatterReading is how far the server has read a scatter's items.
type ScatterReading struct {
	Done      bool  `json:"done"`
	ItemsRead int64 `json:"items_read"`
	BytesRead int64 `json:"bytes_read"`
}

// ScatterSource is where the server reads a scatter's items.
type ScatterSource struct {
	Items            string `json:"items,omitempty"`
	ItemsPrefix      string `json:"items_prefix,omitempty"`
	Format           string `json:"format,omitempty"`
	MaxItemsPerBatch int    `json:"max_items_per_batch,omitempty"`
	MaxBytesPerBatch int    `json:"max_bytes_per_batch,omitempty"`
	GroupBy          string `json:"group_by,omitempty"`
	MaxItemsPerGroup int    `json:"max_items_per_group,omitempty"`
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
	Source                     *ScatterSource  `json:"source,omitempty"`
	Results                    string          `json:"results,omitempty"`
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
func ScatterView(sc *spool.Scatter) Scatter {
	p, spec := sc.Progress, sc.Spec
	v := Scatter{
		ScatterID:    sc.ID,
		State:        sc.State.String(),
		Error:        sc.Error,
		CreatedAt:    utc(sc.CreatedAt),
		UpdatedAt:    utc(sc.UpdatedAt),
		GatherJobID:  sc.GatherJobID,
		FailedJobIDs: sc.FailedJobIDs,
		RedriveCount: sc.RedriveCount,
		Progress: ScatterProgress{
			BatchCount: int32(p.BatchCount), Waiting: int32(p.Waiting), Queued: int32(p.Queued), Running: int32(p.Running),
			Succeeded: int32(p.Succeeded), Failed: int32(p.Failed), Cancelled: int32(p.Cancelled),
			ItemCount: p.ItemCount, ItemsDone: p.ItemsDone,
		},
		Spec: ScatterSpec{
			Queue: spec.Queue, Params: paramsView(spec.Params), MaxAttempts: int32(spec.MaxAttempts), Retries: int32(spec.Retries),
			BatchInput: spec.BatchInput, MaxConcurrency: int32(spec.MaxConcurrency),
			ToleratedFailurePercentage: spec.ToleratedFailurePercentage,
		},
	}
	if n := spec.ToleratedFailureCount; n != nil {
		c := int32(*n)
		v.Spec.ToleratedFailureCount = &c
	}
	if len(v.Spec.BatchInput) == 0 {
		v.Spec.BatchInput = json.RawMessage("{}")
	}
	if g := spec.Gather; g != nil {
		gp := paramsView(*g)
		v.Spec.Gather = &gp
	}
	if src := spec.Source; src != nil {
		v.Spec.Source = &ScatterSource{
			Items: src.Items, ItemsPrefix: src.ItemsPrefix, Format: src.Format, MaxItemsPerBatch: src.MaxItemsPerBatch,
			MaxBytesPerBatch: src.MaxBytesPerBatch, GroupBy: src.GroupBy, MaxItemsPerGroup: src.MaxItemsPerGroup,
		}
	}
	v.Spec.Results, v.ResultManifest = spec.Results, sc.ResultManifest
	if r := sc.Reading; r != nil {
		v.Reading = &ScatterReading{Done: r.Done, ItemsRead: r.ItemsRead, BytesRead: r.BytesRead}
	}
	return v
}

// ScatterListView is a page of scatters as JSON shows it.
func ScatterListView(scs []*spool.Scatter, nextCursor string) ScatterList {
	l := ScatterList{Scatters: make([]Scatter, len(scs)), NextCursor: nextCursor}
	for i, sc := range scs {
		l.Scatters[i] = ScatterView(sc)
	}
	return l
}

// ScatterBatchesView is a page of batches as JSON shows it.
func ScatterBatchesView(bs []*spool.ScatterBatch, next int) ScatterBatches {
	l := ScatterBatches{Batches: make([]ScatterBatch, len(bs)), NextIndex: int32(next)}
	for i, b := range bs {
		l.Batches[i] = ScatterBatch{BatchIndex: int32(b.Index), ItemCount: int32(b.ItemCount)}
		if b.Job != nil {
			j := View(b.Job)
			l.Batches[i].Job = &j
		}
	}
	return l
}
