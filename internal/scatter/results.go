package scatter

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	spoolv1 "github.com/spool-run/spool/gen/spool/v1"
	"github.com/spool-run/spool/internal/convert"
	"github.com/spool-run/spool/internal/s3items"
	"github.com/spool-run/spool/internal/store"
)

// A scatter with spec.results writes its batches' results to S3 the way
// Step Functions' ResultWriter lays them out: under prefix/<scatter id>/,
// SUCCEEDED_<i>.json for batch i that succeeded and FAILED_<i>.json for
// one that did not, each a JSON array of the batch's one run, then
// manifest.json naming them all once the batches have ended. A result is
// written by the round that saw its batch end, after that round is
// recorded, as the round's other acts are.

// resultsDir is where a scatter's results go.
func resultsDir(sc *spoolv1.Scatter) (s3items.Location, bool) {
	loc, err := s3items.Parse(sc.GetSpec().GetResults(), true)
	if err != nil {
		return s3items.Location{}, false
	}
	if loc.Key != "" && !strings.HasSuffix(loc.Key, "/") {
		loc.Key += "/"
	}
	loc.Key += sc.GetScatterId() + "/"
	return loc, true
}

// ManifestOf is the location of the manifest of a scatter's results, ""
// for a scatter without spec.results.
func ManifestOf(sc *spoolv1.Scatter) string {
	dir, ok := resultsDir(sc)
	if !ok {
		return ""
	}
	dir.Key += "manifest.json"
	return dir.String()
}

// CheckResults checks a scatter's results location, and that this server
// can reach its bucket.
func (d *Driver) CheckResults(ctx context.Context, results string) error {
	loc, err := s3items.Parse(results, true)
	if err != nil {
		return invalid("results: %v", err)
	}
	if err := d.CanRead(); err != nil {
		return invalid("results: %v", err)
	}
	if err := d.o.S3.CheckBucket(ctx, loc); err != nil {
		return invalid("results: %v", err)
	}
	return nil
}

// batchRun is one batch's entry in its result file.
type batchRun struct {
	BatchIndex int32
	JobID      string `json:"JobId"`
	// Status is the job's end: SUCCEEDED, FAILED or CANCELLED.
	Status string
	// Output is the batch's result document (null: none).
	Output json.RawMessage
	Error  string `json:",omitempty"`
}

// writeResults writes the results of the batches r saw end.
func (d *Driver) writeResults(ctx context.Context, r *Round) error {
	dir, ok := resultsDir(r.Rec.Scatter)
	if !ok || len(r.Ended) == 0 {
		return nil
	}
	failed := map[int32]bool{}
	for _, i := range r.Failed {
		failed[i] = true
	}
	for _, i := range r.Ended {
		job, err := d.o.Store.Get(ctx, JobOf(r.Rec, i))
		if err != nil {
			return err
		}
		run := batchRun{BatchIndex: i, JobID: job.GetJobId(), Status: strings.ToUpper(convert.State(job.GetState()).String()), Output: json.RawMessage("null")}
		if out := job.GetResult().GetOutput(); out != "" {
			run.Output = json.RawMessage(out)
		}
		run.Error = job.GetResult().GetError()
		body, err := json.Marshal([]batchRun{run})
		if err != nil {
			return err
		}
		loc := dir
		if failed[i] {
			loc.Key += fmt.Sprintf("FAILED_%d.json", i)
		} else {
			loc.Key += fmt.Sprintf("SUCCEEDED_%d.json", i)
		}
		if err := d.o.S3.Put(ctx, loc, body); err != nil {
			return err
		}
	}
	return nil
}

// manifest is manifest.json, in Step Functions' words.
type manifest struct {
	DestinationBucket string
	ScatterID         string `json:"ScatterId"`
	ResultFiles       struct {
		FAILED, PENDING, SUCCEEDED []resultFile
	}
}

type resultFile struct {
	Key  string
	Size int64
}

// writeManifest lists a scatter's result files and writes manifest.json
// naming them. A batch run again after a redrive may have left a
// FAILED_<i>.json beside its SUCCEEDED_<i>.json: the one the record holds
// now is listed.
func (d *Driver) writeManifest(ctx context.Context, rec *store.ScatterRecord) error {
	sc := rec.Scatter
	dir, ok := resultsDir(sc)
	if !ok {
		return nil
	}
	var m manifest
	m.DestinationBucket, m.ScatterID = dir.Bucket, sc.GetScatterId()
	m.ResultFiles.FAILED, m.ResultFiles.PENDING, m.ResultFiles.SUCCEEDED = []resultFile{}, []resultFile{}, []resultFile{}
	for o, err := range d.o.S3.Sizes(ctx, dir) {
		if err != nil {
			return err
		}
		status, b, ok := resultIndex(strings.TrimPrefix(o.Key, dir.Key))
		switch {
		case !ok || b >= sc.GetProgress().GetBatchCount():
		case status == "SUCCEEDED" && !rec.Failed.Has(b):
			m.ResultFiles.SUCCEEDED = append(m.ResultFiles.SUCCEEDED, resultFile{o.Key, o.Size})
		case status == "FAILED" && rec.Failed.Has(b):
			m.ResultFiles.FAILED = append(m.ResultFiles.FAILED, resultFile{o.Key, o.Size})
		}
	}
	body, err := json.Marshal(m)
	if err != nil {
		return err
	}
	dir.Key += "manifest.json"
	return d.o.S3.Put(ctx, dir, body)
}

// resultIndex reads a result file's name: SUCCEEDED or FAILED, and the
// batch's index.
func resultIndex(name string) (string, int32, bool) {
	status, rest, ok := strings.Cut(strings.TrimSuffix(name, ".json"), "_")
	if !ok || (status != "SUCCEEDED" && status != "FAILED") {
		return "", 0, false
	}
	i, err := strconv.ParseInt(rest, 10, 32)
	if err != nil || i < 0 {
		return "", 0, false
	}
	return status, int32(i), true
}
