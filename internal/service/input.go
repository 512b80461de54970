package service

import (
	"bytes"
	"context"
	"encoding/json"
	"strconv"
	"sync/atomic"
	"unicode/utf8"

	"github.com/spool-run/spool"
	spoolv1 "github.com/spool-run/spool/gen/spool/v1"
	"github.com/spool-run/spool/internal/apierr"
	"github.com/spool-run/spool/internal/scatter"
	"github.com/spool-run/spool/internal/scatterjob"
	"github.com/spool-run/spool/internal/store"
)

// GetJobInput returns the document a scatter's job reads on stdin: its
// batch's items with the scatter's batch input, or, for the gather, every
// batch's result. It is built from the store on each call, so a worker that
// retries (or a later attempt) reads the same document.
func (s *Service) GetJobInput(ctx context.Context, m *spoolv1.GetJobInputRequest) (*spoolv1.GetJobInputResponse, error) {
	ref, err := s.lease(ctx, "GetJobInput", m.GetTaskToken())
	if err != nil {
		return nil, err
	}
	job, err := s.store.Get(ctx, ref.JobID)
	if err != nil {
		return nil, s.fail(ctx, "GetJobInput", err)
	}
	if job.GetAttempt() != ref.Attempt || job.GetState() != spoolv1.JobState_JOB_STATE_RUNNING {
		return nil, apierr.Errorf(spool.ErrStaleLease, "job %s is no longer running attempt %d: stop working on it", ref.JobID, ref.Attempt)
	}
	member := job.GetParams().GetScatter()
	if member == nil {
		return nil, invalid("job %s has no input: only a scatter's jobs do", ref.JobID)
	}
	rec, err := s.store.GetScatter(ctx, member.GetScatterId())
	if err != nil {
		return nil, s.fail(ctx, "GetJobInput", err)
	}
	sc := rec.Scatter
	var doc bytes.Buffer
	if member.GetGather() {
		results, failed, err := s.batchResults(ctx, rec, member.GetBatchCount())
		if err != nil {
			return nil, err
		}
		if results != nil {
			doc.WriteString(`{"batch_results":`)
			doc.Write(results)
		} else {
			// Too many results to hand over here: the gather reads
			// them where they were written.
			doc.WriteString(`{"batch_results":null`)
		}
		if m := sc.GetResultManifest(); m != "" {
			q, _ := json.Marshal(m)
			doc.WriteString(`,"result_manifest":`)
			doc.Write(q)
		}
		doc.WriteString(`,"failed_batches":`)
		f, _ := json.Marshal(append([]int32{}, failed...))
		doc.Write(f)
	} else {
		items, err := s.scatters.Batch(ctx, rec, member.GetBatchIndex())
		if err != nil {
			return nil, s.fail(ctx, "GetJobInput", err)
		}
		doc.WriteString(`{"items":`)
		doc.Write(items)
		doc.WriteString(`,"batch_index":` + strconv.Itoa(int(member.GetBatchIndex())))
	}
	doc.WriteString(`,"batch_count":` + strconv.Itoa(int(member.GetBatchCount())))
	doc.WriteString(`,"batch_input":` + orNull(sc.GetSpec().GetBatchInput()))
	id, _ := json.Marshal(sc.GetScatterId())
	doc.WriteString(`,"scatter_id":` + string(id) + "}\n")
	return &spoolv1.GetJobInputResponse{Input: doc.Bytes()}, nil
}

// maxInlineResults bounds the results a gather's input holds when they
// were written to S3 as well: past it, the gather gets the manifest's
// location only, as a document of that size would be slow to build and to
// hand over, and a scatter of many batches would make it larger than any
// job's input should be.
var maxInlineResults atomic.Int64

func init() { maxInlineResults.Store(4 << 20) }

// batchResults is the batch_results object of a gather's input, every
// batch's result by index, and the batches that failed. It is nil when a
// scatter that wrote its results to S3 has more than maxInlineResults of
// them.
func (s *Service) batchResults(ctx context.Context, rec *store.ScatterRecord, n int32) ([]byte, []int32, error) {
	var (
		doc    bytes.Buffer
		failed []int32
	)
	inline := true
	limit := rec.Scatter.GetSpec().GetResults() != ""
	doc.WriteByte('{')
	for i := range n {
		out := ""
		if rec.Failed.Has(i) {
			failed = append(failed, i)
		} else if j, err := s.store.Get(ctx, scatter.JobOf(rec, i)); err == nil {
			out = j.GetResult().GetOutput()
		} else {
			return nil, nil, s.fail(ctx, "GetJobInput", err)
		}
		if !inline {
			continue
		}
		if i > 0 {
			doc.WriteByte(',')
		}
		doc.WriteString(`"` + strconv.Itoa(int(i)) + `":`)
		doc.WriteString(orNull(out))
		if limit && int64(doc.Len()) > maxInlineResults.Load() {
			inline = false
			doc = bytes.Buffer{}
		}
	}
	if !inline {
		return nil, failed, nil
	}
	doc.WriteByte('}')
	return doc.Bytes(), failed, nil
}

// orNull is a stored JSON document, or null for none.
func orNull(doc string) string {
	if doc == "" {
		return "null"
	}
	return doc
}

// checkOutput refuses a job result document that is too big or not JSON.
// The worker checks first and fails the job with the reason; this guards
// the store against other clients.
func checkOutput(out string) error {
	switch {
	case out == "":
		return nil
	case len(out) > scatterjob.MaxResultBytes:
		return invalid("result.output: %d bytes; a result may hold at most %d", len(out), scatterjob.MaxResultBytes)
	case !utf8.ValidString(out) || !json.Valid([]byte(out)):
		return invalid("result.output is not valid JSON")
	}
	return nil
}
