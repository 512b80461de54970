package scatter

import (
	"fmt"

	"google.golang.org/protobuf/proto"

	spoolv1 "github.com/spool-run/spool/gen/spool/v1"
	"github.com/spool-run/spool/internal/store"
)

// BatchJobID is the id of the job of batch i of a scatter: named after the
// scatter, so that every server and every try means the same job.
func BatchJobID(scatterID string, i int32) string { return fmt.Sprintf("%s.%d", scatterID, i) }

// GatherJobID is the id of a scatter's gather job.
func GatherJobID(scatterID string) string { return scatterID + ".gather" }

// JobOf is the id of the job that runs batch i of rec now: BatchJobID's,
// or, once a redrive ran the batch again, that id with the redrive's
// number (".r1"), so that the earlier job keeps its id and its log.
func JobOf(rec *store.ScatterRecord, i int32) string {
	id := BatchJobID(rec.Scatter.GetScatterId(), i)
	if int(i) < len(rec.Gen) && rec.Gen[i] > 0 {
		id += fmt.Sprintf(".r%d", rec.Gen[i])
	}
	return id
}

// GatherOf is the id of rec's gather job in its latest run: each redrive
// gathers again, in a job of its own.
func GatherOf(rec *store.ScatterRecord) string {
	id := GatherJobID(rec.Scatter.GetScatterId())
	if n := rec.Scatter.GetRedriveCount(); n > 0 {
		id += fmt.Sprintf(".r%d", n)
	}
	return id
}

// memberJob is the job of one of a scatter's members (a batch, or the
// gather) under its fixed id, with a request id of its own, so that a
// repeated enqueue finds the job instead of making another.
func memberJob(spec *spoolv1.ScatterSpec, params *spoolv1.JobParams, id string, m *spoolv1.ScatterMember, exec *spoolv1.ExecutionConfig) store.NewJob {
	p := proto.Clone(params).(*spoolv1.JobParams)
	p.Scatter = m
	return store.NewJob{
		ID:          id,
		Queue:       spec.GetQueue(),
		RequestID:   "scatter:" + id,
		Params:      p,
		Execution:   exec,
		MaxAttempts: spec.GetMaxAttempts(),
		Retries:     spec.GetRetries(),
	}
}
