package client

import (
	"context"
	"io"
	"os"
	"strings"
	"time"

	"github.com/spool-run/spool/internal/jobjson"
)

// A job keeps files beside its log: its artifacts. A job submitted with
// SubmitParams.Artifacts has the worker upload the files its globs match
// once the command ends; a program inside a job uploads with
// UploadArtifact and the job token its worker gave it (JobTokenFromEnv).
// Reading them takes what reading the job's log takes.

// Artifact is one file a job kept.
type Artifact struct {
	// Path is the file's path relative to the job's directory, with "/"
	// between its parts.
	Path string
	Size int64
	// SHA256 is the hex SHA-256 of the file's bytes.
	SHA256   string
	Modified time.Time
}

// ArtifactInfo is what a download says of the whole artifact, whatever
// range was read.
type ArtifactInfo struct {
	Size     int64
	SHA256   string
	Modified time.Time
}

// JobTokenFromEnv returns $SPOOL_JOB_TOKEN: inside a job, the credential
// the worker gave the job's command, good for the job's artifacts only
// ("" outside a job).
func JobTokenFromEnv() string { return strings.TrimSpace(os.Getenv("SPOOL_JOB_TOKEN")) }

// UploadArtifact keeps what r yields as artifact path of job jobID,
// replacing one of the same path. It streams r, however large; an
// *os.File (or any reader with a Stat method, or a *bytes.Reader and
// friends with Len) has its size sent first, so a file past the server's
// bounds is refused before any of it goes. Refusals: spool.ErrInvalidArgument
// for a path that cannot name an artifact or a file past a bound
// (artifacts.max_file_bytes, max_job_bytes, max_files, named in the
// message), spool.ErrStaleLease for a job token whose attempt is over,
// spool.ErrPermissionDenied for a key that may not run the job's queue.
// Nothing of a refused or broken-off upload is kept. r is read from where
// it stands and is not closed.
func (c *Client) UploadArtifact(ctx context.Context, jobID, path string, r io.Reader) (*Artifact, error) {
	a, err := c.files.Upload(ctx, jobID, path, r, sizeOf(r))
	if err != nil {
		return nil, err
	}
	return artifactOf(a), nil
}

// sizeOf is r's length when r can tell it, else -1.
func sizeOf(r io.Reader) int64 {
	switch v := r.(type) {
	case interface{ Stat() (os.FileInfo, error) }:
		if fi, err := v.Stat(); err == nil && fi.Mode().IsRegular() {
			if s, ok := r.(io.Seeker); ok {
				if pos, err := s.Seek(0, io.SeekCurrent); err == nil {
					return fi.Size() - pos
				}
			}
		}
	case interface{ Len() int }:
		return int64(v.Len())
	}
	return -1
}

// ListArtifacts lists the artifacts of job jobID, by path.
func (c *Client) ListArtifacts(ctx context.Context, jobID string) ([]Artifact, error) {
	list, err := c.files.List(ctx, jobID)
	if err != nil {
		return nil, err
	}
	out := make([]Artifact, len(list))
	for i, a := range list {
		out[i] = *artifactOf(a)
	}
	return out, nil
}

// DownloadArtifact reads artifact path of job jobID from offset, length
// bytes (length < 0: to its end), as a stream: resume a download with the
// offset of what you have. Close the reader when done. A job without that
// artifact is spool.ErrNotFound.
func (c *Client) DownloadArtifact(ctx context.Context, jobID, path string, offset, length int64) (io.ReadCloser, ArtifactInfo, error) {
	rc, info, err := c.files.Download(ctx, jobID, path, offset, length)
	if err != nil {
		return nil, ArtifactInfo{}, err
	}
	return rc, ArtifactInfo{Size: info.Size, SHA256: info.SHA256, Modified: info.Modified}, nil
}

func artifactOf(a jobjson.Artifact) *Artifact {
	return &Artifact{Path: a.Path, Size: a.Size, SHA256: a.SHA256, Modified: a.Modified}
}
