package httpapi

import (
	"net/http"
	"time"

	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	spoolv1 "github.com/spool-run/spool/gen/spool/v1"
	"github.com/spool-run/spool/internal/convert"
	"github.com/spool-run/spool/internal/jobjson"
	"github.com/spool-run/spool/internal/service"
)

// enqueueJobsRequest is the body of POST /api/v1/jobs/batch (schema
// EnqueueJobsRequest of openapi.yaml).
type enqueueJobsRequest struct {
	Jobs []enqueueJob `json:"jobs"`
}

// enqueueJob is one job of a batch: what it runs, as a scatter's body says
// it (jobFields), and what a job of its own may also have.
type enqueueJob struct {
	jobFields
	RequestID     string `json:"request_id,omitempty"`
	RepositoryURL string `json:"repository_url,omitempty"`
	Ref           string `json:"ref,omitempty"`
	Stdin         []byte `json:"stdin,omitempty"`
	// StdinUpload names a stdin uploaded first (POST /api/v1/uploads),
	// for one larger than a job record holds.
	StdinUpload string            `json:"stdin_upload,omitempty"`
	PTY         bool              `json:"pty,omitempty"`
	Secrets     map[string]string `json:"secrets,omitempty"`
	Batching    *jobjson.Batching `json:"batching,omitempty"`
	// When it runs: at run_at, or run_in_seconds after the server has the
	// request; by priority (1 first to 4, 0: 2); after other jobs.
	RunAt        *time.Time `json:"run_at,omitempty"`
	RunInSeconds float64    `json:"run_in_seconds,omitempty"`
	Priority     int32      `json:"priority,omitempty"`
	After        []string   `json:"after,omitempty"`
	// Notify are URLs POSTed the job's end.
	Notify []string `json:"notify,omitempty"`
}

// request is the job's request as the core takes it.
func (j *enqueueJob) request() (*spoolv1.EnqueueJobRequest, error) {
	params, err := j.params()
	if err != nil {
		return nil, err
	}
	params.RepositoryUrl, params.Ref, params.Stdin, params.StdinUpload, params.Pty = j.RepositoryURL, j.Ref, j.Stdin, j.StdinUpload, j.PTY
	if params.Batching, err = batchingParams(j.Batching); err != nil {
		return nil, err
	}
	m := &spoolv1.EnqueueJobRequest{Queue: j.Queue, Params: params, RequestId: j.RequestID,
		MaxAttempts: j.MaxAttempts, Retries: j.Retries, Secrets: j.Secrets, Priority: j.Priority, After: j.After, Notify: j.Notify}
	if j.RunAt != nil {
		m.RunAt = timestamppb.New(*j.RunAt)
	}
	switch sec := j.RunInSeconds; {
	case sec < 0 || sec >= float64(maxTimeoutSeconds):
		return nil, badRequest("run_in_seconds=%g: want a number of seconds from now, such as 90 (leave it out to run at once)", sec)
	case sec > 0:
		m.RunIn = durationpb.New(time.Duration(sec * float64(time.Second)))
	}
	return m, nil
}

// enqueueJobOf is a job's request as the API shows it (a schedule's job).
func enqueueJobOf(m *spoolv1.EnqueueJobRequest) enqueueJob {
	p := m.GetParams()
	j := enqueueJob{jobFields: jobFields{Queue: m.GetQueue(), Argv: p.GetArgv(), Script: p.GetScript(), Env: p.GetEnv(),
		WorkingDir: p.GetWorkingDir(), TimeoutSeconds: p.GetTimeout().AsDuration().Seconds(), MaxAttempts: m.GetMaxAttempts(), Retries: m.GetRetries()},
		RepositoryURL: p.GetRepositoryUrl(), Ref: p.GetRef(), Stdin: p.GetStdin(), PTY: p.GetPty(), Priority: m.GetPriority(), Notify: m.GetNotify()}
	if b := p.GetBatching(); b != nil {
		j.Batching = &jobjson.Batching{MaxBatchSize: b.GetMaxBatchSize(), FlushIntervalSeconds: b.GetFlushInterval().AsDuration().Seconds()}
	}
	return j
}

// batchingParams is a job's batching as the core takes it; the core
// judges its bounds. Only a flush interval no duration can hold is
// refused here, as timeout_seconds is.
func batchingParams(b *jobjson.Batching) (*spoolv1.JobBatching, error) {
	if b == nil {
		return nil, nil
	}
	out := &spoolv1.JobBatching{MaxBatchSize: b.MaxBatchSize}
	switch sec := b.FlushIntervalSeconds; {
	case sec < 0 || sec >= float64(maxTimeoutSeconds):
		return nil, badRequest("batching.flush_interval_seconds=%g: want a number of seconds above 0, such as 0.2 or 5 (leave it out for the server's)", sec)
	case sec > 0:
		out.FlushInterval = durationpb.New(max(time.Duration(sec*float64(time.Second)), 1))
	}
	return out, nil
}

// enqueueJobsResponse is the answer to POST /api/v1/jobs/batch: a result
// per job, in the body's order.
type enqueueJobsResponse struct {
	Results []enqueueResult `json:"results"`
}

// enqueueResult is how one job went: its job, or its error and the error's
// code (as a Connect call names it: "invalid_argument", ...).
type enqueueResult struct {
	Job          *jobjson.Job `json:"job,omitempty"`
	Deduplicated bool         `json:"deduplicated,omitempty"`
	Error        string       `json:"error,omitempty"`
	Code         string       `json:"code,omitempty"`
}

// enqueueJobs enqueues the body's jobs, each as a job of its own; 200 with
// each job's result, though some may have been refused. A job the body
// cannot describe (a bad timeout) is its own result too.
func (a *api) enqueueJobs(w http.ResponseWriter, r *http.Request) {
	var body enqueueJobsRequest
	err := sameSite(r, "submit jobs with spool submit --batch or a script")
	if err == nil {
		err = readJSON(w, r, &body, service.MaxEnqueueJobsRequestBytes)
	}
	if err == nil {
		err = service.CheckBatchSize(len(body.Jobs))
	}
	if err != nil {
		writeError(w, r, a.Log, err)
		return
	}
	results := make([]enqueueResult, len(body.Jobs))
	req := &spoolv1.EnqueueJobsRequest{}
	var sent []int // the results of req's jobs
	for i := range body.Jobs {
		j, err := body.Jobs[i].request()
		if err != nil {
			_, results[i].Error = statusOf(r, a.Log, err)
			results[i].Code = "invalid_argument"
			continue
		}
		req.Jobs, sent = append(req.Jobs, j), append(sent, i)
	}
	if len(req.Jobs) > 0 {
		resp, err := a.Service.EnqueueJobs(r.Context(), req)
		if err != nil {
			writeError(w, r, a.Log, err)
			return
		}
		for k, res := range resp.GetResults() {
			out := &results[sent[k]]
			out.Deduplicated, out.Error, out.Code = res.GetDeduplicated(), res.GetErrorMessage(), res.GetErrorCode()
			if job := res.GetJob(); job != nil {
				v := jobjson.View(convert.Job(job))
				out.Job = &v
			}
		}
	}
	writeJSON(w, http.StatusOK, enqueueJobsResponse{Results: results})
}
