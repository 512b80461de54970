package httpapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"math"
	"net/http"
	"net/url"
	"strings"

	"github.com/spool-run/spool"
	spoolv1 "github.com/spool-run/spool/gen/spool/v1"
	"github.com/spool-run/spool/internal/jobjson"
)

// defaultJobsLimit is the page size of GET /api/v1/jobs without limit=; a
// larger limit than the core allows is capped there, not refused.
const defaultJobsLimit = 50

func (a *api) listJobs(w http.ResponseWriter, r *http.Request) {
	req, err := listRequest(r.URL.Query())
	if err != nil {
		writeError(w, r, a.Log, err)
		return
	}
	resp, err := a.Service.ListJobs(r.Context(), req)
	if err != nil {
		writeError(w, r, a.Log, err)
		return
	}
	writeJSON(w, http.StatusOK, jobjson.ListView(resp.GetJobs(), resp.GetNextCursor()))
}

// listRequest reads queue, state (repeated or comma-separated), limit and
// cursor.
func listRequest(q url.Values) (*spoolv1.ListJobsRequest, error) {
	limit, err := limitParam(q, defaultJobsLimit, math.MaxInt32)
	if err != nil {
		return nil, err
	}
	states, err := spool.ParseStates(q["state"]...)
	if err != nil {
		return nil, badRequest("state: %v (several: state=queued,running)", errors.Unwrap(err))
	}
	return &spoolv1.ListJobsRequest{Queue: q.Get("queue"), Cursor: q.Get("cursor"), PageSize: int32(limit), States: states}, nil
}

func (a *api) getJob(w http.ResponseWriter, r *http.Request) {
	resp, err := a.Service.GetJob(r.Context(), &spoolv1.GetJobRequest{JobId: r.PathValue("job_id")})
	if err != nil {
		writeError(w, r, a.Log, err)
		return
	}
	writeJSON(w, http.StatusOK, jobjson.View(resp.GetJob()))
}

// cancelRequest is the optional body of POST /api/v1/jobs/{job_id}/cancel.
type cancelRequest struct {
	Reason string `json:"reason"`
}

const maxCancelBody = 4 << 10

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
	resp, err := a.Service.CancelJob(r.Context(), &spoolv1.CancelJobRequest{JobId: r.PathValue("job_id"), Reason: req.Reason})
	if err != nil {
		writeError(w, r, a.Log, err)
		return
	}
	writeJSON(w, http.StatusOK, jobjson.View(resp.GetJob()))
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
