// Package artifact speaks the REST routes of a job's artifacts (PUT, GET
// with ranges, the list) for every program that keeps or fetches them:
// the client package, the worker (which uploads what a job's globs match)
// and spool artifact upload inside a job. Bodies are streamed both ways,
// never held whole.
package artifact

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/spool-run/spool/internal/apierr"
	"github.com/spool-run/spool/internal/jobjson"
	"github.com/spool-run/spool/internal/wire"
)

// Remote is a server's artifact routes, called through REST (with an API
// key, or a job's own token: REST.WithBearer).
type Remote struct {
	REST *wire.REST
}

// Info is what a download says of the artifact.
type Info struct {
	// Size is the whole artifact's size, whatever range was asked for.
	Size int64
	// SHA256 is the hex SHA-256 of the whole artifact.
	SHA256   string
	Modified time.Time
}

// maxAnswer bounds the JSON answer to an upload.
const maxAnswer = 64 << 10

func (r *Remote) url(jobID, path string) string {
	u := r.REST.URL("/api/v1/jobs/" + url.PathEscape(jobID) + "/artifacts")
	if path != "" {
		u += "/" + (&url.URL{Path: path}).EscapedPath()
	}
	return u
}

func (r *Remote) do(ctx context.Context, method, u string, body io.Reader, size int64, header http.Header) (*http.Response, error) {
	if body != nil {
		// The transport closes a body it was given: the caller's file
		// stays the caller's to close.
		body = io.NopCloser(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, u, body)
	if err != nil {
		return nil, err
	}
	if body != nil {
		req.ContentLength = size
		if size == 0 {
			req.Body = http.NoBody
		}
		req.Header.Set("Content-Type", "application/octet-stream")
	}
	for k, v := range header {
		req.Header[k] = v
	}
	return r.REST.Do(req)
}

// Upload keeps what body yields as the artifact path of job jobID. size is
// its length when known (-1 otherwise): the server refuses a body known
// to be past its bounds before any of it is sent.
func (r *Remote) Upload(ctx context.Context, jobID, path string, body io.Reader, size int64) (jobjson.Artifact, error) {
	resp, err := r.do(ctx, http.MethodPut, r.url(jobID, path), body, size, nil)
	if err != nil {
		return jobjson.Artifact{}, fmt.Errorf("upload artifact %s of job %s: %w", path, jobID, err)
	}
	defer resp.Body.Close()
	var a jobjson.Artifact
	if err := json.NewDecoder(io.LimitReader(resp.Body, maxAnswer)).Decode(&a); err != nil {
		return jobjson.Artifact{}, fmt.Errorf("upload artifact %s of job %s: the server's answer: %w", path, jobID, err)
	}
	return a, nil
}

// maxListBody bounds a list's answer: a job keeps at most a million
// artifacts (artifacts.max_files), of paths of at most 400 bytes.
const maxListBody = 1 << 30

// List lists the artifacts of job jobID, by path.
func (r *Remote) List(ctx context.Context, jobID string) ([]jobjson.Artifact, error) {
	resp, err := r.do(ctx, http.MethodGet, r.url(jobID, ""), nil, 0, nil)
	if err != nil {
		return nil, fmt.Errorf("list the artifacts of job %s: %w", jobID, err)
	}
	defer resp.Body.Close()
	var l jobjson.ArtifactList
	if err := json.NewDecoder(io.LimitReader(resp.Body, maxListBody)).Decode(&l); err != nil {
		return nil, fmt.Errorf("list the artifacts of job %s: the server's answer: %w", jobID, err)
	}
	return l.Artifacts, nil
}

// Download reads the artifact path of job jobID from offset, length bytes
// (length < 0: to its end). Close the reader when done.
func (r *Remote) Download(ctx context.Context, jobID, path string, offset, length int64) (io.ReadCloser, Info, error) {
	if offset < 0 || length == 0 {
		return nil, Info{}, apierr.Invalid("download artifact %s: offset %d, length %d: read from offset 0 or more, a length other than 0", path, offset, length)
	}
	h := http.Header{}
	if offset > 0 || length > 0 {
		rng := "bytes=" + strconv.FormatInt(offset, 10) + "-"
		if length > 0 {
			rng += strconv.FormatInt(offset+length-1, 10)
		}
		h.Set("Range", rng)
	}
	resp, err := r.do(ctx, http.MethodGet, r.url(jobID, path), nil, 0, h)
	if err != nil {
		return nil, Info{}, fmt.Errorf("download artifact %s of job %s: %w", path, jobID, err)
	}
	info := Info{Size: resp.ContentLength, SHA256: resp.Header.Get("X-Checksum-Sha256")}
	info.Modified, _ = http.ParseTime(resp.Header.Get("Last-Modified"))
	if resp.StatusCode == http.StatusPartialContent {
		// Content-Range: bytes FIRST-LAST/SIZE
		cr := resp.Header.Get("Content-Range")
		_, total, ok := strings.Cut(cr, "/")
		n, err := strconv.ParseInt(total, 10, 64)
		if !ok || err != nil {
			resp.Body.Close()
			return nil, Info{}, fmt.Errorf("download artifact %s of job %s: the server sent a range without its size (Content-Range %q)", path, jobID, cr)
		}
		info.Size = n
	} else if offset > 0 {
		// The whole file came although a range was asked for: skip to it.
		if _, err := io.CopyN(io.Discard, resp.Body, offset); err != nil {
			resp.Body.Close()
			return nil, Info{}, fmt.Errorf("download artifact %s of job %s: %w", path, jobID, err)
		}
	}
	return resp.Body, info, nil
}
