package service

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"regexp"
	"time"

	"github.com/google/uuid"
	"google.golang.org/protobuf/proto"

	"github.com/spool-run/spool"
	spoolv1 "github.com/spool-run/spool/gen/spool/v1"
	"github.com/spool-run/spool/internal/apierr"
	"github.com/spool-run/spool/internal/blob"
)

// A stdin too large for a job record travels beside it, in the blob store.
// The client uploads it first (Upload), then enqueues the job naming the
// upload (params.stdin_upload). The core copies the upload under the id it
// gives the job before the job exists, so a worker that leases the job
// always finds its stdin, and the job's blobs all live under one prefix
// that goes when the job does (removal.go).
//
// The keys, shared with every other kind of file kept beside jobs:
//
//	jobs/{jobID}/        everything of one job
//	jobs/{jobID}/stdin   its stdin
//	uploads/{uploadID}   an upload no job has taken yet
const (
	jobBlobsPrefix = "jobs/"
	uploadsPrefix  = "uploads/"
)

// UploadMaxAge is how long an upload is kept for an enqueue to name it:
// the retention chore deletes older ones (SweepUploads). A job copies its
// upload, so a request repeated within that time (a client trying again)
// still finds it.
const UploadMaxAge = 24 * time.Hour

// jobBlobs is the prefix of every blob of job id.
func jobBlobs(id string) string { return jobBlobsPrefix + id + "/" }

// jobStdinKey is where job id's stdin is kept when it is not inline.
func jobStdinKey(id string) string { return jobBlobs(id) + "stdin" }

// Uploaded is what Upload stored.
type Uploaded struct {
	// ID names the upload in params.stdin_upload.
	ID     string
	Size   int64
	SHA256 string
}

// MaxStdinBytes is the most a job's uploaded stdin may hold
// (jobs.max_stdin_bytes): an entrance refuses a body declared longer
// before reading any of it.
func (s *Service) MaxStdinBytes() int64 { return s.cfg.Jobs.MaxStdinBytes }

// Upload stores body, read to its end, as a stdin for a job enqueued
// later, for a caller who may submit jobs (checked before any of body is
// read). More than jobs.max_stdin_bytes is refused and nothing is kept.
func (s *Service) Upload(ctx context.Context, body io.Reader) (Uploaded, error) {
	caller, err := s.authorize(ctx, PermSubmit, "")
	if err != nil {
		return Uploaded{}, err
	}
	if err := s.needBlobs("a stdin over what a job record holds"); err != nil {
		return Uploaded{}, err
	}
	id := rand.Text()
	limit := s.MaxStdinBytes()
	capped := &cappedReader{r: body, left: limit}
	info, err := s.blobs.Put(ctx, uploadsPrefix+id, capped)
	switch {
	case capped.over:
		return Uploaded{}, invalid("the upload holds more than %d bytes, the most a job's stdin may (jobs.max_stdin_bytes): put the data where the job can fetch it and pass its name", limit)
	case err != nil:
		return Uploaded{}, s.fail(ctx, "Upload", err)
	}
	s.audit(ctx, caller, "stdin uploaded", "upload_id", id, "bytes", info.Size)
	return Uploaded{ID: id, Size: info.Size, SHA256: info.SHA256}, nil
}

// errOverLimit ends a read past the limit, failing the Put so that it
// keeps nothing.
var errOverLimit = errors.New("body over the limit")

// cappedReader reads r until more than left bytes came, then fails.
type cappedReader struct {
	r    io.Reader
	left int64
	over bool
}

func (c *cappedReader) Read(p []byte) (int, error) {
	if int64(len(p)) > c.left+1 {
		p = p[:c.left+1]
	}
	n, err := c.r.Read(p)
	c.left -= int64(n)
	if c.left < 0 {
		c.over = true
		return 0, errOverLimit
	}
	return n, err
}

// needBlobs refuses what needs a blob store on a server that has none.
func (s *Service) needBlobs(what string) error {
	if s.blobs != nil {
		return nil
	}
	return apierr.Errorf(spool.ErrInvalidArgument,
		"this server keeps no files beside jobs, so %s cannot be taken: keep stdin within the %d KiB a job record holds with the command and environment, or have the operator set blobs.s3.bucket",
		what, maxParamBytes>>10)
}

// uploadID is what Upload names uploads (rand.Text): nothing else can be
// one, so an id never reaches a key outside uploads/.
var uploadID = regexp.MustCompile(`^[A-Z2-7]{26}$`)

// uploadKey is the blob key of upload id, or "" when id is none.
func uploadKey(id string) string {
	if !uploadID.MatchString(id) {
		return ""
	}
	return uploadsPrefix + id
}

// checkStdinFields refuses the stdin fields only spool sets, and an upload
// given with an inline stdin.
func checkStdinFields(p *spoolv1.JobParams) error {
	switch {
	case p.GetStdinSize() != 0 || p.GetStdinSha256() != "":
		return invalid("params.stdin_size and params.stdin_sha256 are set by spool; upload a large stdin and name it in params.stdin_upload")
	case p.GetStdinUpload() != "" && len(p.GetStdin()) > 0:
		return invalid("params: give stdin or stdin_upload, not both")
	case p.GetStdinUpload() != "" && !uploadID.MatchString(p.GetStdinUpload()):
		return invalid("params.stdin_upload %q is not an upload id: use the upload_id POST /api/v1/uploads answered", truncate(p.GetStdinUpload(), 80))
	}
	return nil
}

// noUpload refuses an upload where it cannot be taken (what: a scatter's
// jobs, a schedule), since one upload is copied into one job.
func noUpload(p *spoolv1.JobParams, what string) error {
	if p.GetStdinUpload() != "" {
		return invalid("params.stdin_upload: %s cannot take an uploaded stdin", what)
	}
	return nil
}

// newJobID is a job id chosen before the job is stored, so that its blobs
// can be in place first. It is the kind of id the stores give.
func newJobID() string { return uuid.Must(uuid.NewV7()).String() }

// stdinBeside copies the blob at src under job id's stdin key, returning
// params with the job's stdin recorded as kept there.
func (s *Service) stdinBeside(ctx context.Context, params *spoolv1.JobParams, src, id string) (*spoolv1.JobParams, error) {
	if err := s.needBlobs("an uploaded stdin"); err != nil {
		return nil, err
	}
	r, _, err := s.blobs.Get(ctx, src, 0, -1)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	info, err := s.blobs.Put(ctx, jobStdinKey(id), r)
	if err != nil {
		return nil, err
	}
	p := proto.CloneOf(params)
	p.StdinUpload, p.StdinSize, p.StdinSha256 = "", info.Size, info.SHA256
	return p, nil
}

// adoptUpload gives a job about to be enqueued under id the stdin its
// params name as an upload.
func (s *Service) adoptUpload(ctx context.Context, params *spoolv1.JobParams, id string) (*spoolv1.JobParams, error) {
	up := params.GetStdinUpload()
	key := uploadKey(up)
	if key == "" {
		return nil, invalid("params.stdin_upload %q is not an upload id", truncate(up, 80))
	}
	p, err := s.stdinBeside(ctx, params, key, id)
	if errors.Is(err, blob.ErrNotFound) {
		return nil, apierr.Errorf(spool.ErrNotFound, "upload %q is not on this server (uploads are kept %v for a job to name them): upload the stdin again", up, UploadMaxAge)
	}
	return p, err
}

// settleStdin cleans up after an enqueue that copied a stdin under id:
// when the store did not keep a job of that id (a failure, or a repeated
// request_id answered with the earlier job), the copy goes.
func (s *Service) settleStdin(ctx context.Context, id string, job *spoolv1.Job, created bool) {
	if id == "" || (created && job.GetJobId() == id) {
		return
	}
	if _, err := s.blobs.DeletePrefix(context.WithoutCancel(ctx), jobBlobs(id)); err != nil {
		// Nothing refers to the copy; the orphan costs only space.
		s.log.WarnContext(ctx, "a stdin copied for a job not created stays behind", "key", jobStdinKey(id), "error", err)
	}
}

// JobStdin opens the stdin kept beside a job for the worker running it:
// the caller's key must let it run jobs and the task token must be the
// job's current attempt's. The reader streams the blob; close it.
func (s *Service) JobStdin(ctx context.Context, jobID, taskToken string) (io.ReadCloser, blob.Info, error) {
	ref, err := s.lease(ctx, "JobStdin", taskToken)
	if err != nil {
		return nil, blob.Info{}, err
	}
	if ref.JobID != jobID {
		return nil, blob.Info{}, apierr.Errorf(spool.ErrPermissionDenied, "the task token is for job %s, not %s: fetch the stdin of the job you hold", ref.JobID, truncate(jobID, maxJobID))
	}
	job, err := s.store.Get(ctx, jobID)
	if err != nil {
		return nil, blob.Info{}, s.fail(ctx, "JobStdin", err)
	}
	if job.GetAttempt() != ref.Attempt || job.GetState() != spoolv1.JobState_JOB_STATE_RUNNING {
		return nil, blob.Info{}, apierr.Errorf(spool.ErrStaleLease, "job %s is no longer running attempt %d: stop working on it", jobID, ref.Attempt)
	}
	if job.GetParams().GetStdinSize() == 0 {
		return nil, blob.Info{}, apierr.Errorf(spool.ErrNotFound, "job %s keeps no stdin beside it: its stdin, if any, is in its params", jobID)
	}
	if err := s.needBlobs("a job's stdin"); err != nil {
		return nil, blob.Info{}, err
	}
	r, info, err := s.blobs.Get(ctx, jobStdinKey(jobID), 0, -1)
	if errors.Is(err, blob.ErrNotFound) {
		return nil, blob.Info{}, apierr.Errorf(spool.ErrNotFound, "the stdin of job %s is gone from the blob store", jobID)
	}
	if err != nil {
		return nil, blob.Info{}, s.fail(ctx, "JobStdin", err)
	}
	return r, info, nil
}

// SweepUploads deletes the uploads stored before before, which no job
// took in time (or which jobs took and copied). It returns how many went.
func (s *Service) SweepUploads(ctx context.Context, before time.Time) (int, error) {
	if s.blobs == nil {
		return 0, nil
	}
	// The keys first, then the deletes: no backend is asked to delete
	// under a listing it is still walking.
	var old []string
	for info, err := range s.blobs.List(ctx, uploadsPrefix) {
		if err != nil {
			return 0, fmt.Errorf("listing uploads: %w", err)
		}
		if info.Modified.Before(before) {
			old = append(old, info.Key)
		}
	}
	for i, key := range old {
		if err := s.blobs.Delete(ctx, key); err != nil {
			return i, fmt.Errorf("deleting upload %s: %w", key, err)
		}
	}
	return len(old), nil
}
