package httpapi

import (
	"io"
	"net/http"
	"strconv"

	"github.com/spool-run/spool/internal/wire"
)

// A stdin too large for a job record goes up on its own first (POST
// /api/v1/uploads, the raw bytes as the body), and the job names it; the
// worker running the job streams it back down (GET
// /api/v1/jobs/{job_id}/stdin). Neither end holds it whole: the body is
// read straight into the blob store, and the blob straight into the
// response.

// uploadResponse is the answer to POST /api/v1/uploads (schema Upload).
type uploadResponse struct {
	UploadID string `json:"upload_id"`
	Size     int64  `json:"size"`
	SHA256   string `json:"sha256"`
}

// upload stores the body as a stdin for a job to come; 201 with its id.
// The core checks the caller may submit before any of the body is read.
func (a *api) upload(w http.ResponseWriter, r *http.Request) {
	err := sameSite(r, "upload with spool submit --stdin or a script")
	limit := a.Service.MaxStdinBytes()
	if err == nil && r.ContentLength > limit {
		err = errorf(http.StatusRequestEntityTooLarge, "the body is %d bytes, over %d, the most a job's stdin may hold (jobs.max_stdin_bytes)", r.ContentLength, limit)
	}
	if err != nil {
		writeError(w, r, a.Log, err)
		return
	}
	up, err := a.Service.Upload(r.Context(), r.Body)
	if err != nil {
		writeError(w, r, a.Log, err)
		return
	}
	writeJSON(w, http.StatusCreated, uploadResponse{UploadID: up.ID, Size: up.Size, SHA256: up.SHA256})
}

// jobStdin streams a job's stdin kept beside it to the worker running the
// job.
func (a *api) jobStdin(w http.ResponseWriter, r *http.Request) {
	rc, info, err := a.Service.JobStdin(r.Context(), r.PathValue("job_id"), r.Header.Get(wire.TaskTokenHeader))
	if err != nil {
		writeError(w, r, a.Log, err)
		return
	}
	defer rc.Close()
	h := w.Header()
	h.Set("Content-Type", "application/octet-stream")
	h.Set("Content-Length", strconv.FormatInt(info.Size, 10))
	h.Set("Cache-Control", "no-store")
	h.Set("X-Content-Type-Options", "nosniff")
	if info.SHA256 != "" {
		h.Set("Spool-Sha256", info.SHA256)
	}
	if _, err := io.Copy(w, rc); err != nil {
		if r.Context().Err() == nil {
			a.Log.WarnContext(r.Context(), "stdin download broken off", "job_id", r.PathValue("job_id"), "error", err)
		}
		// Part of the stdin is out under a 200: break the connection so
		// the worker sees a failed fetch, not a short stdin.
		panic(http.ErrAbortHandler)
	}
}
