package httpapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/url"
	"strings"
	"unicode"

	spoolv1 "github.com/spool-run/spool/gen/spool/v1"
	"github.com/spool-run/spool/internal/store"
)

// Page sizes of GET /api/v1/jobs, as the Connect API's ListJobs.
const (
	defaultJobsLimit = 50
	maxJobsLimit     = 1000
)

// maxJobID bounds a job id in a path: longer ones are no job's.
const maxJobID = 100

// JobList is a page of jobs, newest first.
type JobList struct {
	Jobs []Job `json:"jobs"`
	// NextCursor is passed as cursor for the next page; empty on the last.
	NextCursor string `json:"next_cursor,omitempty"`
}

func (a *api) listJobs(w http.ResponseWriter, r *http.Request) {
	f, err := listFilter(r.URL.Query())
	if err != nil {
		writeError(w, r, a.Log, err)
		return
	}
	jobs, next, err := a.Store.List(r.Context(), f)
	if err != nil {
		writeError(w, r, a.Log, err)
		return
	}
	out := JobList{Jobs: make([]Job, len(jobs)), NextCursor: next}
	for i, j := range jobs {
		out.Jobs[i] = jobView(j)
	}
	writeJSON(w, http.StatusOK, out)
}

// listFilter reads queue, state (repeated or comma-separated), limit and
// cursor.
func listFilter(q url.Values) (store.ListFilter, error) {
	var f store.ListFilter
	var err error
	if f.Queue, err = textParam(q, "queue", 200); err != nil {
		return f, err
	}
	if f.Cursor, err = textParam(q, "cursor", 1000); err != nil {
		return f, err
	}
	if f.Limit, err = limitParam(q, defaultJobsLimit, maxJobsLimit); err != nil {
		return f, err
	}
	for _, v := range q["state"] {
		for name := range strings.SplitSeq(v, ",") {
			s, ok := stateNamed(strings.TrimSpace(name))
			if !ok {
				return f, badRequest("state=%q: want queued, running, succeeded, failed or cancelled (several: state=queued,running)", truncate(name, 40))
			}
			f.States = append(f.States, s)
		}
	}
	return f, nil
}

func stateNamed(name string) (spoolv1.JobState, bool) {
	for v := range spoolv1.JobState_name {
		s := spoolv1.JobState(v)
		if s != spoolv1.JobState_JOB_STATE_UNSPECIFIED && store.StateName(s) == name {
			return s, true
		}
	}
	return 0, false
}

func (a *api) getJob(w http.ResponseWriter, r *http.Request) {
	job, err := a.job(r)
	if err != nil {
		writeError(w, r, a.Log, err)
		return
	}
	writeJSON(w, http.StatusOK, jobView(job))
}

// job returns the job named by the request's path, or an error for 404.
func (a *api) job(r *http.Request) (*spoolv1.Job, error) {
	id, err := jobID(r)
	if err != nil {
		return nil, err
	}
	return a.Store.Get(r.Context(), id)
}

// jobID is the job id in the request's path. Ids longer than any job's are
// answered as unknown without asking the store.
func jobID(r *http.Request) (string, error) {
	id := r.PathValue("job_id")
	if len(id) > maxJobID {
		return "", store.JobNotFound(truncate(id, maxJobID))
	}
	return id, nil
}

// cancelRequest is the optional body of POST /api/v1/jobs/{job_id}/cancel.
type cancelRequest struct {
	Reason string `json:"reason"`
}

const (
	maxCancelBody = 4 << 10
	maxReason     = 1000 // as the Connect API's CancelJob
)

func (a *api) cancelJob(w http.ResponseWriter, r *http.Request) {
	// No credentials guard this endpoint yet, so at least a page on another
	// site must not be able to make a visitor's browser cancel jobs.
	if !sameOrigin(r) {
		writeError(w, r, a.Log, errorf(http.StatusForbidden, "cross-origin request refused: cancel from the spool web UI, or send no Origin header"))
		return
	}
	var req cancelRequest
	if err := readJSON(r, &req, maxCancelBody); err != nil {
		writeError(w, r, a.Log, err)
		return
	}
	if len(req.Reason) > maxReason || strings.ContainsFunc(req.Reason, func(c rune) bool { return !unicode.IsPrint(c) }) {
		writeError(w, r, a.Log, badRequest("reason: want at most %d bytes of printable text (no newlines)", maxReason))
		return
	}
	id, err := jobID(r)
	if err != nil {
		writeError(w, r, a.Log, err)
		return
	}
	job, err := a.Store.Cancel(r.Context(), id, req.Reason)
	if err != nil {
		writeError(w, r, a.Log, err)
		return
	}
	a.Log.InfoContext(r.Context(), "job cancel requested", "job_id", job.GetJobId(), "state", store.StateName(job.GetState()), "via", "rest")
	writeJSON(w, http.StatusOK, jobView(job))
}

// readJSON decodes an optional JSON body into v: an empty body leaves v as
// it is.
func readJSON(r *http.Request, v any, limit int64) error {
	body, err := io.ReadAll(io.LimitReader(r.Body, limit+1))
	switch {
	case err != nil:
		return badRequest("reading the request body: %v", err)
	case int64(len(body)) > limit:
		return badRequest("request body over %d bytes", limit)
	case len(bytes.TrimSpace(body)) == 0:
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		var syn *json.SyntaxError
		if errors.As(err, &syn) {
			return badRequest("request body is not JSON: %v", err)
		}
		return badRequest("request body: %v", err)
	}
	return nil
}

// sameOrigin reports whether a browser request comes from a page of this
// server. Requests without an Origin header (curl, scripts) are allowed.
func sameOrigin(r *http.Request) bool {
	origin := r.Header.Get("Origin")
	if origin == "" {
		return true
	}
	u, err := url.Parse(origin)
	return err == nil && strings.EqualFold(u.Host, r.Host)
}
