package httpapi

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/url"
	"reflect"
	"slices"
	"strings"

	"github.com/spool-run/spool"
	spoolv1 "github.com/spool-run/spool/gen/spool/v1"
	"github.com/spool-run/spool/internal/convert"
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
	writeJSON(w, http.StatusOK, jobjson.ListView(convert.Jobs(resp.GetJobs()), resp.GetNextCursor()))
}

// listRequest reads queue, source, state (repeated or comma-separated),
// limit and cursor.
func listRequest(q url.Values) (*spoolv1.ListJobsRequest, error) {
	limit, err := limitParam(q, defaultJobsLimit, math.MaxInt32)
	if err != nil {
		return nil, err
	}
	states, err := spool.ParseStates(q["state"]...)
	if err != nil {
		return nil, badRequest("state: %v (several: state=queued,running)", errors.Unwrap(err))
	}
	return &spoolv1.ListJobsRequest{Queue: q.Get("queue"), Source: q.Get("source"), Cursor: q.Get("cursor"), PageSize: int32(limit), States: convert.StatesProto(states)}, nil
}

func (a *api) getJob(w http.ResponseWriter, r *http.Request) {
	resp, err := a.Service.GetJob(r.Context(), &spoolv1.GetJobRequest{JobId: r.PathValue("job_id")})
	if err != nil {
		writeError(w, r, a.Log, err)
		return
	}
	writeJSON(w, http.StatusOK, jobjson.View(convert.Job(resp.GetJob())))
}

// cancelRequest is the optional body of POST /api/v1/jobs/{job_id}/cancel.
type cancelRequest struct {
	Reason string `json:"reason"`
}

// maxActionBody caps the small optional bodies of cancel and rerun.
const maxActionBody = 4 << 10

// readCancel reads a cancel's body; on false the error is written. Only
// the web UI's own pages may cancel from a browser.
func (a *api) readCancel(w http.ResponseWriter, r *http.Request) (cancelRequest, bool) {
	var req cancelRequest
	err := sameSite(r, "cancel from the spool web UI")
	if err == nil {
		err = readJSON(w, r, &req, maxActionBody)
	}
	if err != nil {
		writeError(w, r, a.Log, err)
		return req, false
	}
	return req, true
}

func (a *api) cancelJob(w http.ResponseWriter, r *http.Request) {
	req, ok := a.readCancel(w, r)
	if !ok {
		return
	}
	resp, err := a.Service.CancelJob(r.Context(), &spoolv1.CancelJobRequest{JobId: r.PathValue("job_id"), Reason: req.Reason})
	if err != nil {
		writeError(w, r, a.Log, err)
		return
	}
	writeJSON(w, http.StatusOK, jobjson.View(convert.Job(resp.GetJob())))
}

// readJSON decodes an optional JSON body into v: an empty body leaves v as
// it is. The body must be one JSON document of at most limit bytes, with no
// field v does not have.
func readJSON(w http.ResponseWriter, r *http.Request, v any, limit int64) error {
	// 413, so that a client knows to send less, not something else.
	tooBig := errorf(http.StatusRequestEntityTooLarge, "request body over %d bytes, the most this endpoint accepts: send less at once", limit)
	// A body declared too big is refused before any of it is read, so the
	// client does not upload hundreds of MiB to be told no.
	if r.ContentLength > limit {
		return tooBig
	}
	// Decoding from the body as it arrives keeps a single copy of it (the
	// decoder's buffer) rather than also holding it whole beforehand: a
	// scatter's body may be 256 MiB. MaxBytesReader also has the server
	// close the connection instead of reading the rest of a body refused.
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, limit))
	dec.DisallowUnknownFields()
	var (
		tooLarge *http.MaxBytesError
		syn      *json.SyntaxError
		typ      *json.UnmarshalTypeError
	)
	err := dec.Decode(v)
	if err == nil {
		// Whatever follows the document would be dropped without a word
		// (two bodies run together, say), so it is refused instead.
		switch _, err = dec.Token(); {
		case errors.Is(err, io.EOF):
			return nil
		case errors.As(err, &tooLarge):
			return tooBig
		}
		return badRequest("request body: more follows the JSON document; send exactly one")
	}
	switch {
	case errors.Is(err, io.EOF): // nothing but white space
		return nil
	case errors.As(err, &tooLarge):
		return tooBig
	case errors.As(err, &syn):
		return badRequest("request body is not JSON: %v", err)
	case errors.Is(err, io.ErrUnexpectedEOF):
		return badRequest("request body is not JSON: it ends in the middle of a value")
	case errors.As(err, &typ):
		// encoding/json words this in Go's terms (struct and type names);
		// the client only knows the body's.
		if field := jsonPath(v, typ.Field); field != "" {
			return badRequest("request body: %s: got JSON %s, want %s", field, typ.Value, jsonType(typ.Type))
		}
		return badRequest("request body: got JSON %s, want %s", typ.Value, jsonType(typ.Type))
	}
	return badRequest("request body: %v", err)
}

// jsonPath is the path of a field of v as the body spells it: encoding/json
// puts in the Go names of the structs v embeds, which the body does not
// have.
func jsonPath(v any, path string) string {
	embedded := map[string]bool{}
	t := reflect.TypeOf(v)
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	var walk func(reflect.Type)
	walk = func(t reflect.Type) {
		for f := range t.Fields() {
			if f.Anonymous && f.Tag.Get("json") == "" && f.Type.Kind() == reflect.Struct {
				embedded[f.Name] = true
				walk(f.Type)
			}
		}
	}
	if t.Kind() == reflect.Struct {
		walk(t)
	}
	parts := slices.DeleteFunc(strings.Split(path, "."), func(p string) bool { return p == "" || embedded[p] })
	return strings.Join(parts, ".")
}

// jsonType says what a Go type takes, in JSON's terms.
func jsonType(t reflect.Type) string {
	switch t.Kind() {
	case reflect.Pointer:
		return jsonType(t.Elem())
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "true or false"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return fmt.Sprintf("an integer from %d to %d", int64(-1)<<(t.Bits()-1), int64(1)<<(t.Bits()-1)-1)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return fmt.Sprintf("an integer from 0 to %d", uint64(math.MaxUint64)>>(64-t.Bits()))
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.Slice, reflect.Array:
		return "an array"
	case reflect.Map, reflect.Struct:
		return "an object"
	}
	return t.String()
}

// sameSite refuses a call that changes something when it comes from a
// page of another site, even a configured CORS origin (whose pages may read
// logs): only spool's own pages and clients that send no Origin header
// (curl, scripts) may start or stop work, so no page elsewhere can make a
// visitor's browser do it. hint says how to make the call instead.
func sameSite(r *http.Request, hint string) error {
	if sameOrigin(r) {
		return nil
	}
	return errorf(http.StatusForbidden, "cross-origin request refused: %s, or send no Origin header", hint)
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

// rerunRequest is the optional body of POST /api/v1/jobs/{job_id}/rerun.
type rerunRequest struct {
	RequestID string `json:"request_id"`
}

// rerunJob enqueues a finished job again; 201 with the new job. Only the
// web UI's own pages may do it from a browser.
func (a *api) rerunJob(w http.ResponseWriter, r *http.Request) {
	var req rerunRequest
	err := sameSite(r, "rerun from the spool web UI")
	if err == nil {
		err = readJSON(w, r, &req, maxActionBody)
	}
	if err != nil {
		writeError(w, r, a.Log, err)
		return
	}
	resp, err := a.Service.RerunJob(r.Context(), &spoolv1.RerunJobRequest{JobId: r.PathValue("job_id"), RequestId: req.RequestID})
	if err != nil {
		writeError(w, r, a.Log, err)
		return
	}
	writeJSON(w, http.StatusCreated, jobjson.View(convert.Job(resp.GetJob())))
}

// deleteJob removes a finished job and its log; 204.
func (a *api) deleteJob(w http.ResponseWriter, r *http.Request) {
	err := sameSite(r, "delete from the spool web UI")
	if err == nil {
		_, err = a.Service.DeleteJob(r.Context(), &spoolv1.DeleteJobRequest{JobId: r.PathValue("job_id")})
	}
	if err != nil {
		writeError(w, r, a.Log, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}
