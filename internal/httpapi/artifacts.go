package httpapi

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"path"
	"strings"

	"github.com/spool-run/spool/internal/jobjson"
	"github.com/spool-run/spool/internal/service"
)

// A job's artifacts: listed as JSON, downloaded with ranges (what
// http.ServeContent does, with the file's SHA-256 as its ETag) and
// uploaded with PUT, streamed to the blob store as the body comes in.
// Who may do which, and every bound, is the core's.

func (a *api) listArtifacts(w http.ResponseWriter, r *http.Request) {
	job, list, err := a.Service.ListArtifacts(r.Context(), r.PathValue("job_id"))
	if err != nil {
		writeError(w, r, a.Log, err)
		return
	}
	out := jobjson.ArtifactList{JobID: job.GetJobId(), Artifacts: make([]jobjson.Artifact, len(list))}
	for i, art := range list {
		out.Artifacts[i] = artifactView(art)
	}
	writeJSON(w, http.StatusOK, out)
}

func artifactView(a service.Artifact) jobjson.Artifact {
	return jobjson.Artifact{Path: a.Path, Size: a.Size, SHA256: a.SHA256, Modified: a.Modified.UTC()}
}

// downloadArtifact sends an artifact, or the ranges of it asked for
// (Range, If-Range, If-None-Match, as http.ServeContent answers them).
// A job's files are anyone's content: they go as downloads, never as
// pages the browser would run in the server's origin.
func (a *api) downloadArtifact(w http.ResponseWriter, r *http.Request) {
	f, err := a.Service.OpenArtifact(r.Context(), r.PathValue("job_id"), r.PathValue("path"))
	if err != nil {
		writeError(w, r, a.Log, err)
		return
	}
	defer f.Close()
	h := w.Header()
	h.Set("Content-Type", "application/octet-stream")
	name := path.Base(f.Path)
	h.Set("Content-Disposition", fmt.Sprintf(`attachment; filename="%s"; filename*=UTF-8''%s`, fileName(name), attrEscape(name)))
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Content-Security-Policy", "sandbox")
	h.Set("Cache-Control", "private, no-cache")
	h.Set("ETag", `"`+f.SHA256+`"`)
	h.Set("X-Checksum-Sha256", f.SHA256)
	http.ServeContent(w, r, "", f.Modified, f)
}

// uploadArtifact stores the body as an artifact. The core refuses a
// body whose Content-Length is past a bound before reading it, and one
// without that goes past while it streams; either way nothing is kept.
func (a *api) uploadArtifact(w http.ResponseWriter, r *http.Request) {
	art, err := a.Service.UploadArtifact(r.Context(), r.PathValue("job_id"), r.PathValue("path"), r.ContentLength, r.Body)
	if errors.Is(err, service.ErrArtifactTooLarge) {
		// The rest of the body is not read: the connection closes
		// after the answer instead of draining it.
		w.Header().Set("Connection", "close")
		err = errorf(http.StatusRequestEntityTooLarge, "%s", err.Error())
	}
	if err != nil {
		writeError(w, r, a.Log, err)
		return
	}
	w.Header().Set("Location", fmt.Sprintf("/api/v1/jobs/%s/artifacts/%s", url.PathEscape(r.PathValue("job_id")), escapePath(art.Path)))
	writeJSON(w, http.StatusCreated, artifactView(art))
}

// attrEscape percent-encodes every byte of s that may not stand as it is
// in the extended filename parameter (RFC 8187).
func attrEscape(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || strings.IndexByte("!#$&+-.^_`|~", c) >= 0 {
			b.WriteByte(c)
		} else {
			fmt.Fprintf(&b, "%%%02X", c)
		}
	}
	return b.String()
}

// escapePath escapes each "/"-separated part of an artifact's path.
func escapePath(p string) string {
	u := url.URL{Path: p}
	return u.EscapedPath()
}
