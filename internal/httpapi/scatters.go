package httpapi

import (
	"bytes"
	"encoding/json"
	"math"
	"net/http"
	"net/url"
	"time"

	"google.golang.org/protobuf/types/known/durationpb"

	spoolv1 "github.com/spool-run/spool/gen/spool/v1"
	"github.com/spool-run/spool/internal/convert"
	"github.com/spool-run/spool/internal/jobjson"
	"github.com/spool-run/spool/internal/scatterjob"
)

// jobFields are what a request body says about the jobs it makes: their
// queue, what they run and how often they may be tried (in schema
// CreateScatterRequest of openapi.yaml). They are kept apart from the
// scatter's own fields so that any body that makes jobs embeds the same
// ones, with the same names and the same conversion.
//
// Every field may be left out (the core fills in defaults or says what is
// missing), hence omitempty: the OpenAPI test reads it as "not required".
type jobFields struct {
	Queue          string            `json:"queue,omitempty"`
	Argv           []string          `json:"argv,omitempty"`
	Script         string            `json:"script,omitempty"`
	Env            map[string]string `json:"env,omitempty"`
	WorkingDir     string            `json:"working_dir,omitempty"`
	TimeoutSeconds float64           `json:"timeout_seconds,omitempty"`
	MaxAttempts    int32             `json:"max_attempts,omitempty"`
	Retries        int32             `json:"retries,omitempty"`
}

// maxTimeoutSeconds keeps timeout_seconds within what a time.Duration
// holds: beyond it the conversion would wrap around to a negative or tiny
// timeout instead of a long one.
const maxTimeoutSeconds = math.MaxInt64 / int64(time.Second)

// params is what the jobs run, for the core to check.
func (f *jobFields) params() (*spoolv1.JobParams, error) {
	p := &spoolv1.JobParams{Argv: f.Argv, Script: f.Script, Env: f.Env, WorkingDir: f.WorkingDir}
	switch sec := f.TimeoutSeconds; {
	case sec < 0 || sec >= float64(maxTimeoutSeconds):
		return nil, badRequest("timeout_seconds=%g: want a number of seconds above 0 and below %d (leave it out for no limit)", sec, maxTimeoutSeconds)
	case sec > 0:
		// At least a nanosecond: a timeout too small to count is still a
		// timeout, not "no limit".
		p.Timeout = durationpb.New(max(time.Duration(sec*float64(time.Second)), 1))
	}
	return p, nil
}

// createScatterRequest is the body of POST /api/v1/scatters. Batches stay
// raw JSON: the core wants each as text, and decoding its items would only
// cost memory on a body of up to 256 MiB.
type createScatterRequest struct {
	jobFields
	Batches                    []json.RawMessage      `json:"batches,omitempty"`
	BatchInput                 json.RawMessage        `json:"batch_input,omitempty"`
	MaxConcurrency             int32                  `json:"max_concurrency,omitempty"`
	ToleratedFailureCount      *int32                 `json:"tolerated_failure_count,omitempty"`
	ToleratedFailurePercentage *float32               `json:"tolerated_failure_percentage,omitempty"`
	Gather                     string                 `json:"gather,omitempty"`
	Source                     *jobjson.ScatterSource `json:"source,omitempty"`
	Results                    string                 `json:"results,omitempty"`
}

// request is the body as the core takes it. It drops the body's batches as
// it converts them, so that a large body is not held twice over.
func (b *createScatterRequest) request() (*spoolv1.CreateScatterRequest, error) {
	params, err := b.params()
	if err != nil {
		return nil, err
	}
	spec := &spoolv1.ScatterSpec{
		Queue: b.Queue, Params: params, MaxAttempts: b.MaxAttempts, Retries: b.Retries,
		BatchInput: string(b.BatchInput), MaxConcurrency: b.MaxConcurrency,
		ToleratedFailureCount: b.ToleratedFailureCount, ToleratedFailurePercentage: b.ToleratedFailurePercentage,
	}
	if b.Gather != "" {
		spec.Gather = scatterjob.GatherParams(params, b.Gather)
	}
	spec.Results = b.Results
	if src := b.Source; src != nil {
		for _, n := range []int{src.MaxItemsPerBatch, src.MaxBytesPerBatch, src.MaxItemsPerGroup} {
			if n < 0 || n > math.MaxInt32 {
				return nil, badRequest("source: %d is out of range for a batching limit", n)
			}
		}
		spec.Source = &spoolv1.ScatterSource{
			Items: src.Items, ItemsPrefix: src.ItemsPrefix, Format: src.Format,
			MaxItemsPerBatch: int32(src.MaxItemsPerBatch), MaxBytesPerBatch: int32(src.MaxBytesPerBatch),
			GroupBy: src.GroupBy, MaxItemsPerGroup: int32(src.MaxItemsPerGroup),
		}
	}
	req := &spoolv1.CreateScatterRequest{Spec: spec, Batches: make([]string, len(b.Batches))}
	var buf bytes.Buffer
	for i, batch := range b.Batches {
		// The core counts a batch's items and refuses an empty one; what
		// is not an array at all is said here, in the body's own terms.
		if len(batch) == 0 || batch[0] != '[' {
			return nil, badRequest(`batches[%d] is %s, not an array: each batch is a JSON array of items, such as [{"id": 1}, {"id": 2}]`, i, jsonKind(batch))
		}
		buf.Reset()
		if err := json.Compact(&buf, batch); err != nil {
			return nil, badRequest("batches[%d]: %v", i, err) // the decoder has checked it already
		}
		req.Batches[i] = buf.String()
		b.Batches[i] = nil
	}
	return req, nil
}

// jsonKind names the kind of JSON value v is, for error messages.
func jsonKind(v json.RawMessage) string {
	if len(v) == 0 {
		return "missing"
	}
	switch v[0] {
	case '{':
		return "an object"
	case '"':
		return "a string"
	case 'n':
		return "null"
	case 't', 'f':
		return "a boolean"
	}
	return "a number"
}

func (a *api) createScatter(w http.ResponseWriter, r *http.Request) {
	if err := sameSite(r, "start scatters with spool scatter or a script"); err != nil {
		writeError(w, r, a.Log, err)
		return
	}
	var body createScatterRequest
	if err := readJSON(w, r, &body, a.scatterBodyBytes); err != nil {
		writeError(w, r, a.Log, err)
		return
	}
	req, err := body.request()
	if err != nil {
		writeError(w, r, a.Log, err)
		return
	}
	resp, err := a.Service.CreateScatter(r.Context(), req)
	if err != nil {
		writeError(w, r, a.Log, err)
		return
	}
	sc := resp.GetScatter()
	w.Header().Set("Location", "/api/v1/scatters/"+url.PathEscape(sc.GetScatterId()))
	writeJSON(w, http.StatusCreated, jobjson.ScatterView(convert.Scatter(sc)))
}

// pageSize reads page_size for the core, which has its own default (0)
// and maximum and says so when it is exceeded.
func pageSize(q url.Values) (int32, error) {
	v, err := intParam(q, "page_size", 0, 0, math.MaxInt32, "a whole number (absent or 0: the default)")
	return int32(v), err
}

func (a *api) listScatters(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	size, err := pageSize(q)
	if err != nil {
		writeError(w, r, a.Log, err)
		return
	}
	resp, err := a.Service.ListScatters(r.Context(), &spoolv1.ListScattersRequest{PageSize: size, Cursor: q.Get("cursor")})
	if err != nil {
		writeError(w, r, a.Log, err)
		return
	}
	writeJSON(w, http.StatusOK, jobjson.ScatterListView(convert.Scatters(resp.GetScatters()), resp.GetNextCursor()))
}

func (a *api) getScatter(w http.ResponseWriter, r *http.Request) {
	resp, err := a.Service.GetScatter(r.Context(), &spoolv1.GetScatterRequest{ScatterId: r.PathValue("scatter_id")})
	if err != nil {
		writeError(w, r, a.Log, err)
		return
	}
	writeJSON(w, http.StatusOK, jobjson.ScatterView(convert.Scatter(resp.GetScatter())))
}

func (a *api) listScatterBatches(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	size, err := pageSize(q)
	if err != nil {
		writeError(w, r, a.Log, err)
		return
	}
	from, err := intParam(q, "from", 0, 0, math.MaxInt32, "a batch index, 0 or more (next_index of the previous page)")
	if err != nil {
		writeError(w, r, a.Log, err)
		return
	}
	resp, err := a.Service.ListScatterBatches(r.Context(), &spoolv1.ListScatterBatchesRequest{
		ScatterId: r.PathValue("scatter_id"), FromIndex: int32(from), PageSize: size})
	if err != nil {
		writeError(w, r, a.Log, err)
		return
	}
	writeJSON(w, http.StatusOK, jobjson.ScatterBatchesView(convert.ScatterBatches(resp.GetBatches()), int(resp.GetNextIndex())))
}

func (a *api) cancelScatter(w http.ResponseWriter, r *http.Request) {
	req, ok := a.readCancel(w, r)
	if !ok {
		return
	}
	resp, err := a.Service.CancelScatter(r.Context(), &spoolv1.CancelScatterRequest{ScatterId: r.PathValue("scatter_id"), Reason: req.Reason})
	if err != nil {
		writeError(w, r, a.Log, err)
		return
	}
	writeJSON(w, http.StatusOK, jobjson.ScatterView(convert.Scatter(resp.GetScatter())))
}

// redriveScatter runs an ended scatter's failed batches again. Its body,
// if any, is an empty object: nothing is to be said but the scatter.
func (a *api) redriveScatter(w http.ResponseWriter, r *http.Request) {
	resp, err := a.Service.RedriveScatter(r.Context(), &spoolv1.RedriveScatterRequest{ScatterId: r.PathValue("scatter_id")})
	if err != nil {
		writeError(w, r, a.Log, err)
		return
	}
	writeJSON(w, http.StatusOK, jobjson.ScatterView(convert.Scatter(resp.GetScatter())))
}
