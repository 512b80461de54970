package service

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spool-run/spool"
	spoolv1 "github.com/spool-run/spool/gen/spool/v1"
	"github.com/spool-run/spool/internal/apierr"
	"github.com/spool-run/spool/internal/blob"
	"github.com/spool-run/spool/internal/convert"
	"github.com/spool-run/spool/internal/store"
	"github.com/spool-run/spool/internal/token"
)

// Artifacts are files a job keeps beside its log: its command's outputs
// (spool submit --artifacts, spool artifact upload). They live in the
// server's blob store under jobs/{job id}/artifacts/{path}, so everything
// of a job is under one prefix and goes with the job.
//
// Who may do what:
//   - upload: the job's own process, with the job token its worker was
//     given with the lease (only while that attempt runs), or a key that
//     may run jobs of the job's queue;
//   - list: the same, and whoever may read the job's log;
//   - download: whoever may read the job's log (a job token may not).
//
// The bounds are the server's settings (artifacts.*): a file past one is
// refused naming it, before the body is read when its size is known and
// as soon as it goes past otherwise; the blob store then keeps nothing of
// it.

// Artifact describes one file a job kept.
type Artifact struct {
	// Path is the artifact's name, relative to the job's directory, with
	// "/" between its parts.
	Path     string
	Size     int64
	SHA256   string
	Modified time.Time
}

// ErrArtifactTooLarge is wrapped by the refusal of an upload past a bound
// (file size, the job's total, the number of files), so that an entrance
// can answer it as its own "too large".
var ErrArtifactTooLarge = errors.New("artifact too large")

// jobTokenLife is how long a job token is good for beyond the job's own
// timeout. The token is refused anyway once its attempt stops running;
// the expiry only bounds a token copied out of a job that runs for ever.
const jobTokenLife = 7 * 24 * time.Hour

// maxArtifactPath bounds an artifact's path: its blob key, with the
// job's prefix, must stay within blob.MaxKeyBytes.
const maxArtifactPath = 400

// artifactPrefix is where a job's artifacts are kept in the blob store.
func artifactPrefix(jobID string) string { return "jobs/" + jobID + "/artifacts/" }

// jobToken signs the token a lease hands the job's process.
func (s *Service) jobToken(job *spoolv1.Job, attempt int32) string {
	life := jobTokenLife
	if t := job.GetParams().GetTimeout(); t != nil {
		life += max(t.AsDuration(), 0)
	}
	return s.signer.SignJob(token.Job{JobID: job.GetJobId(), Attempt: attempt, Expires: time.Now().Add(life).Unix()})
}

// IsJobToken reports whether a bearer credential is a job token rather
// than an API key: the door tells them apart by it.
func IsJobToken(bearer string) bool { return strings.HasPrefix(bearer, token.JobTokenPrefix) }

// jobTokenOf checks a job token's signature and expiry.
func (s *Service) jobTokenOf(tok string) (token.Job, error) {
	j, err := s.signer.VerifyJob(tok)
	if err != nil {
		return token.Job{}, apierr.Errorf(spool.ErrUnauthenticated,
			"this job token is not valid (%v): a worker gives each job's command its own in SPOOL_JOB_TOKEN; other calls need an API key", err)
	}
	if time.Now().Unix() >= j.Expires {
		return token.Job{}, apierr.Errorf(spool.ErrUnauthenticated, "the job token of job %s expired at %s", j.JobID, time.Unix(j.Expires, 0).UTC().Format(time.RFC3339))
	}
	return j, nil
}

// errJobTokenElsewhere refuses a job token anywhere but its job's
// artifacts.
func errJobTokenElsewhere(jobID string) error {
	return apierr.Errorf(spool.ErrPermissionDenied,
		"a job token keeps the artifacts of its own job (%s) and does nothing else: other calls need an API key (Authorization: Bearer KEY)", jobID)
}

// errNoBlobs answers artifact calls on a server that keeps no blobs.
func errNoBlobs() error {
	return apierr.Errorf(spool.ErrUnavailable,
		"this server keeps no artifacts: it has no blob store (on AWS, set blobs.s3.bucket; see docs/artifacts.md)")
}

// CheckArtifactPath refuses a path that cannot name an artifact: it must
// be relative, "/"-separated, without . or .. parts, as blob keys are.
func CheckArtifactPath(path string) error {
	if len(path) > maxArtifactPath {
		return invalid("artifact path is %d bytes; at most %d", len(path), maxArtifactPath)
	}
	if err := blob.CheckKey(path); err != nil {
		return invalid("artifact path %q cannot be used: %v (a path is relative to the job's directory, with / between its parts)",
			truncate(path, 80), strings.TrimPrefix(err.Error(), blob.ErrInvalidKey.Error()+": "))
	}
	return nil
}

// artifactJob checks who may act on job id's artifacts, for perm
// (PermWork: upload; PermRead: list), and reads the job. A job token
// passes for its own job while its attempt runs; a key needs perm on the
// job's queue.
func (s *Service) artifactJob(ctx context.Context, op, id string, perm Permission) (*spoolv1.Job, error) {
	cr := credentialsFrom(ctx)
	if err := s.CheckHost(cr.Host); err != nil {
		return nil, err
	}
	c, err := s.callerOf(ctx, cr)
	if err != nil {
		return nil, err
	}
	if c.job == nil {
		if _, err := s.authorize(ctx, perm, ""); err != nil {
			return nil, err
		}
	}
	if err := checkJobID(id); err != nil {
		return nil, err
	}
	if c.job != nil && c.job.JobID != id {
		return nil, apierr.Errorf(spool.ErrPermissionDenied, "this job token keeps the artifacts of job %s, not of job %s", c.job.JobID, id)
	}
	if s.blobs == nil {
		return nil, errNoBlobs()
	}
	if err := blob.CheckPrefix(artifactPrefix(id)); err != nil {
		return nil, invalid("job %q cannot keep artifacts: its id cannot name a folder of the blob store", truncate(id, 80))
	}
	job, err := s.store.Get(ctx, id)
	if err != nil {
		return nil, s.fail(ctx, op, err)
	}
	if c.job != nil {
		// The token is checked against the store at every use: once its
		// attempt is over (the job ended, was retried, or the lease was
		// lost), the process it was given to keeps nothing more.
		if job.GetState() != spoolv1.JobState_JOB_STATE_RUNNING || job.GetAttempt() != c.job.Attempt {
			return nil, apierr.Errorf(spool.ErrStaleLease, "attempt %d of job %s, which this job token was given to, is no longer running (the job is %s, attempt %d)",
				c.job.Attempt, id, convert.State(job.GetState()), job.GetAttempt())
		}
		return job, nil
	}
	if perm == PermRead && !c.mayUse(job.GetQueue()) {
		// As for the job's log: a key limited to other queues does not
		// see the job at all.
		return nil, store.JobNotFound(id)
	}
	if err := c.useQueue(perm, job.GetQueue()); err != nil {
		return nil, err
	}
	return job, nil
}

// UploadArtifact stores what r yields as the artifact path of job jobID,
// replacing one of the same path. size is the body's length when known
// (-1 otherwise): a body known to be past a bound is refused before any of
// it is read. r is read as a stream, never held whole.
func (s *Service) UploadArtifact(ctx context.Context, jobID, path string, size int64, r io.Reader) (Artifact, error) {
	job, err := s.artifactJob(ctx, "UploadArtifact", jobID, PermWork)
	if err != nil {
		return Artifact{}, err
	}
	if err := CheckArtifactPath(path); err != nil {
		return Artifact{}, err
	}
	lim := s.cfg.Artifacts
	if size > lim.MaxFileBytes {
		return Artifact{}, tooLarge("artifact %s is %d bytes, over the server's artifacts.max_file_bytes (%d)", path, size, lim.MaxFileBytes)
	}
	key := artifactPrefix(jobID) + path
	kept, files, replaces, err := s.keptBesides(ctx, jobID, key)
	if err != nil {
		return Artifact{}, s.fail(ctx, "UploadArtifact", err)
	}
	if files >= int64(lim.MaxFiles) {
		return Artifact{}, tooLarge("job %s keeps %d artifacts already, the server's artifacts.max_files", jobID, files)
	}
	room := min(lim.MaxFileBytes, lim.MaxJobBytes-kept)
	if size > room {
		return Artifact{}, tooLarge("artifact %s is %d bytes; job %s has %d bytes of artifacts and the server's artifacts.max_job_bytes is %d",
			path, size, jobID, kept, lim.MaxJobBytes)
	}
	body := &boundedReader{r: r, left: room}
	info, err := s.blobs.Put(ctx, key, body)
	if body.over {
		if room < lim.MaxFileBytes {
			return Artifact{}, tooLarge("artifact %s goes past the %d bytes left of the server's artifacts.max_job_bytes (%d) for job %s; nothing of it was kept",
				path, room, lim.MaxJobBytes, jobID)
		}
		return Artifact{}, tooLarge("artifact %s goes past the server's artifacts.max_file_bytes (%d); nothing of it was kept", path, lim.MaxFileBytes)
	}
	if err != nil {
		if body.err != nil || ctx.Err() != nil {
			// The upload broke off on the sender's side: nothing was kept.
			return Artifact{}, apierr.Errorf(spool.ErrInvalidArgument, "the upload of artifact %s broke off after %d bytes, and nothing of it was kept: %v",
				path, body.read, cmp.Or(body.err, ctx.Err()))
		}
		return Artifact{}, s.fail(ctx, "UploadArtifact", err)
	}
	if !replaces {
		// Another upload of the job (here or on another server) may have
		// been stored meanwhile: counted again now, a new file that took
		// the job past a bound goes, so the bounds hold for the job
		// whatever raced. (Both of two such uploads may go; neither is
		// half kept.)
		kept, files, _, err := s.keptBesides(ctx, jobID, key)
		if err == nil && (files >= int64(lim.MaxFiles) || kept+info.Size > lim.MaxJobBytes) {
			if err := s.blobs.Delete(context.WithoutCancel(ctx), key); err != nil {
				return Artifact{}, s.fail(ctx, "UploadArtifact", err)
			}
			return Artifact{}, tooLarge("artifact %s would take job %s past the server's artifacts.max_job_bytes (%d) or artifacts.max_files (%d) with the uploads stored meanwhile; it was not kept",
				path, jobID, lim.MaxJobBytes, lim.MaxFiles)
		}
	}
	s.log.InfoContext(ctx, "artifact kept", "job_id", jobID, "attempt", job.GetAttempt(), "path", path, "bytes", info.Size)
	return artifactOf(jobID, info), nil
}

// keptBesides counts the bytes and files job jobID keeps other than the
// one at key, and says whether one is at key.
func (s *Service) keptBesides(ctx context.Context, jobID, key string) (bytes, files int64, exists bool, err error) {
	for info, err := range s.blobs.List(ctx, artifactPrefix(jobID)) {
		if err != nil {
			return 0, 0, false, err
		}
		if info.Key == key {
			exists = true
			continue
		}
		bytes += info.Size
		files++
	}
	return bytes, files, exists, nil
}

// tooLarge is a refusal of an upload past a bound.
func tooLarge(format string, args ...any) error {
	return apierr.Errorf(spool.ErrInvalidArgument, "%w: %s", ErrArtifactTooLarge, fmt.Sprintf(format, args...))
}

// boundedReader fails once more than left bytes come through it, which
// makes the blob store's Put fail and keep nothing.
type boundedReader struct {
	r    io.Reader
	left int64
	read int64
	over bool
	err  error // the reader's own failure, not io.EOF
}

func (b *boundedReader) Read(p []byte) (int, error) {
	if b.over {
		return 0, ErrArtifactTooLarge
	}
	// Read one byte past the bound, so a body of exactly the bound ends
	// with io.EOF and one a byte longer is caught.
	if int64(len(p)) > b.left+1 {
		p = p[:b.left+1]
	}
	n, err := b.r.Read(p)
	b.read += int64(n)
	if int64(n) > b.left {
		b.over = true
		return 0, ErrArtifactTooLarge
	}
	b.left -= int64(n)
	if err != nil && err != io.EOF {
		b.err = err
	}
	return n, err
}

// ListArtifacts lists the artifacts of job jobID, by path.
func (s *Service) ListArtifacts(ctx context.Context, jobID string) (*spoolv1.Job, []Artifact, error) {
	job, err := s.artifactJob(ctx, "ListArtifacts", jobID, PermRead)
	if err != nil {
		return nil, nil, err
	}
	var out []Artifact
	for info, err := range s.blobs.List(ctx, artifactPrefix(jobID)) {
		if err != nil {
			return nil, nil, s.fail(ctx, "ListArtifacts", err)
		}
		if info.SHA256 == "" {
			// Some stores (S3) list sizes without checksums: the
			// checksum is in each blob's own description.
			if info, err = s.blobs.Stat(ctx, info.Key); errors.Is(err, blob.ErrNotFound) {
				continue // replaced or deleted since it was listed
			} else if err != nil {
				return nil, nil, s.fail(ctx, "ListArtifacts", err)
			}
		}
		out = append(out, artifactOf(jobID, info))
	}
	return job, out, nil
}

// OpenArtifact opens artifact path of job jobID to read, for whoever may
// read the job's log. Close it when done.
func (s *Service) OpenArtifact(ctx context.Context, jobID, path string) (*ArtifactFile, error) {
	if _, err := s.job(ctx, "OpenArtifact", jobID); err != nil {
		return nil, err
	}
	if s.blobs == nil {
		return nil, errNoBlobs()
	}
	if err := CheckArtifactPath(path); err != nil {
		return nil, err
	}
	key := artifactPrefix(jobID) + path
	info, err := s.blobs.Stat(ctx, key)
	if errors.Is(err, blob.ErrNotFound) {
		return nil, apierr.Errorf(spool.ErrNotFound, "job %s has no artifact %s: spool artifacts list %s shows what it has", jobID, path, jobID)
	}
	if err != nil {
		return nil, s.fail(ctx, "OpenArtifact", err)
	}
	return &ArtifactFile{Artifact: artifactOf(jobID, info), ctx: ctx, blobs: s.blobs, key: key}, nil
}

// ArtifactFile reads an artifact from any offset: it is an io.ReadSeeker
// (what http.ServeContent serves ranges from) that reads the blob store
// from where it was last sought, only when read.
type ArtifactFile struct {
	Artifact
	ctx   context.Context
	blobs blob.Store
	key   string
	pos   int64
	rc    io.ReadCloser
}

// Read reads from the current offset.
func (f *ArtifactFile) Read(p []byte) (int, error) {
	if f.pos >= f.Size {
		return 0, io.EOF
	}
	if f.rc == nil {
		rc, _, err := f.blobs.Get(f.ctx, f.key, f.pos, -1)
		if err != nil {
			return 0, fmt.Errorf("read artifact %s: %w", f.Path, err)
		}
		f.rc = rc
	}
	n, err := f.rc.Read(p)
	f.pos += int64(n)
	return n, err
}

// Seek moves the offset the next Read reads from.
func (f *ArtifactFile) Seek(offset int64, whence int) (int64, error) {
	switch whence {
	case io.SeekCurrent:
		offset += f.pos
	case io.SeekEnd:
		offset += f.Size
	}
	if offset < 0 {
		return f.pos, invalid("a range must not start before the artifact's first byte")
	}
	if offset != f.pos && f.rc != nil {
		f.rc.Close()
		f.rc = nil
	}
	f.pos = offset
	return offset, nil
}

// Close ends the read.
func (f *ArtifactFile) Close() error {
	if f.rc == nil {
		return nil
	}
	err := f.rc.Close()
	f.rc = nil
	return err
}

func artifactOf(jobID string, info blob.Info) Artifact {
	return Artifact{Path: strings.TrimPrefix(info.Key, artifactPrefix(jobID)), Size: info.Size, SHA256: info.SHA256, Modified: info.Modified}
}
