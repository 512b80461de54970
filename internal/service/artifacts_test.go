package service

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/spool-run/spool"
	spoolv1 "github.com/spool-run/spool/gen/spool/v1"
	"github.com/spool-run/spool/internal/blob"
	"github.com/spool-run/spool/internal/blob/dirblob"
	"github.com/spool-run/spool/internal/blob/pgblob"
	"github.com/spool-run/spool/internal/blob/s3blob"
	"github.com/spool-run/spool/internal/config"
	"github.com/spool-run/spool/internal/mototest"
	"github.com/spool-run/spool/internal/store"
	"github.com/spool-run/spool/internal/store/backends/memstore"
	"github.com/spool-run/spool/internal/store/backends/pgstore/pgtest"
	"github.com/spool-run/spool/internal/token"
)

// artifactRig is a core with keys and a blob store, and a job running on
// queue "builds".
type artifactRig struct {
	s     *Service
	st    *memstore.Store
	blobs blob.Store
	admin context.Context
	lease *spoolv1.JobLease
}

func newArtifactRig(t *testing.T, blobs blob.Store, tune func(*config.Config)) *artifactRig {
	t.Helper()
	cfg := config.Default()
	if tune != nil {
		tune(cfg)
	}
	r := &artifactRig{st: memstore.New(), blobs: blobs}
	signer, err := token.NewSigner(make([]byte, 32))
	if err != nil {
		t.Fatal(err)
	}
	r.s = New(Options{Store: r.st, Config: cfg, Signer: signer, Blobs: blobs})
	r.admin = r.key(t, "admin", spoolv1.KeyRole_KEY_ROLE_ADMIN)
	if _, err := r.s.EnqueueJob(r.admin, &spoolv1.EnqueueJobRequest{Queue: "builds", Params: &spoolv1.JobParams{Argv: []string{"make"}}}); err != nil {
		t.Fatal(err)
	}
	r.lease = r.dequeue(t)
	return r
}

func (r *artifactRig) dequeue(t *testing.T) *spoolv1.JobLease {
	t.Helper()
	resp, err := r.s.DequeueJobs(r.admin, &spoolv1.DequeueJobsRequest{Queue: "builds", MaxJobs: 1, WorkerId: "w1"})
	if err != nil || len(resp.GetLeases()) != 1 {
		t.Fatalf("lease: %v, %v", resp, err)
	}
	return resp.GetLeases()[0]
}

// key makes a key of role (limited to queues) and returns a context that
// shows it.
func (r *artifactRig) key(t *testing.T, name string, role spoolv1.KeyRole, queues ...string) context.Context {
	t.Helper()
	secret := NewSecret()
	k := &spoolv1.Key{Name: name, Role: role, Queues: queues, CreatedAt: timestamppb.Now()}
	if err := r.st.CreateKey(context.Background(), store.KeyRecord{Key: k, Hash: HashKey(secret)}); err != nil {
		t.Fatal(err)
	}
	return WithCredentials(context.Background(), Credentials{Host: "localhost", Key: secret})
}

// asJob is a context that shows the job token tok, let in at the door.
func (r *artifactRig) asJob(t *testing.T, tok string) context.Context {
	t.Helper()
	ctx, err := r.s.Authenticate(WithCredentials(context.Background(), Credentials{Host: "localhost", JobToken: tok}))
	if err != nil {
		t.Fatalf("the door refused a job token: %v", err)
	}
	return ctx
}

func (r *artifactRig) jobID() string { return r.lease.GetJob().GetJobId() }

func (r *artifactRig) list(t *testing.T) []Artifact {
	t.Helper()
	_, list, err := r.s.ListArtifacts(r.admin, r.jobID())
	if err != nil {
		t.Fatal(err)
	}
	return list
}

func sum(b []byte) string { s := sha256.Sum256(b); return hex.EncodeToString(s[:]) }

// TestArtifactsOnEveryBlobStore: a job's process keeps files with its job
// token, and whoever may read the job lists and reads them back, whole and
// in ranges, on each blob store.
func TestArtifactsOnEveryBlobStore(t *testing.T) {
	for name, open := range map[string]func(t *testing.T) blob.Store{
		"dir": func(t *testing.T) blob.Store {
			s, err := dirblob.Open(t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			return s
		},
		"postgres": func(t *testing.T) blob.Store {
			s, err := pgblob.Open(context.Background(), pgtest.NewDatabase(t))
			if err != nil {
				t.Fatal(err)
			}
			return s
		},
		"s3": func(t *testing.T) blob.Store {
			srv := mototest.For(t)
			cfg := s3blob.Config{Bucket: mototest.NewName("artifacts"), Endpoint: srv.URL, PathStyle: true, PartSizeMB: s3blob.MinPartSizeMB}
			c := s3.NewFromConfig(srv.AWSConfig(), func(o *s3.Options) { o.UsePathStyle = true })
			if _, err := c.CreateBucket(t.Context(), &s3.CreateBucketInput{Bucket: aws.String(cfg.Bucket)}); err != nil {
				t.Fatal(err)
			}
			s, err := s3blob.New(t.Context(), srv.AWSConfig(), cfg)
			if err != nil {
				t.Fatal(err)
			}
			return s
		},
	} {
		t.Run(name, func(t *testing.T) {
			bs := open(t)
			t.Cleanup(func() { bs.Close() })
			r := newArtifactRig(t, bs, nil)
			job := r.asJob(t, r.lease.GetJobToken())
			report := []byte(strings.Repeat("coverage 91%\n", 1000))
			a, err := r.s.UploadArtifact(job, r.jobID(), "reports/cover.txt", -1, bytes.NewReader(report))
			if err != nil {
				t.Fatal(err)
			}
			if a.Path != "reports/cover.txt" || a.Size != int64(len(report)) || a.SHA256 != sum(report) {
				t.Fatalf("uploaded %+v", a)
			}
			if _, err := r.s.UploadArtifact(job, r.jobID(), "app.bin", 3, strings.NewReader("abc")); err != nil {
				t.Fatal(err)
			}
			// The job's process may list what it kept.
			if _, list, err := r.s.ListArtifacts(job, r.jobID()); err != nil || len(list) != 2 {
				t.Fatalf("the job lists %v, %v", list, err)
			}
			reader := r.key(t, "reader", spoolv1.KeyRole_KEY_ROLE_READ)
			_, list, err := r.s.ListArtifacts(reader, r.jobID())
			if err != nil || len(list) != 2 || list[0].Path != "app.bin" || list[1].Path != "reports/cover.txt" || list[1].SHA256 != sum(report) {
				t.Fatalf("listed %+v, %v", list, err)
			}
			f, err := r.s.OpenArtifact(reader, r.jobID(), "reports/cover.txt")
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			if _, err := f.Seek(13, io.SeekStart); err != nil {
				t.Fatal(err)
			}
			part := make([]byte, 13)
			if _, err := io.ReadFull(f, part); err != nil || !bytes.Equal(part, report[13:26]) {
				t.Fatalf("read from 13: %q, %v", part, err)
			}
			if _, err := f.Seek(0, io.SeekStart); err != nil {
				t.Fatal(err)
			}
			if all, err := io.ReadAll(f); err != nil || !bytes.Equal(all, report) {
				t.Fatalf("read whole: %d bytes, %v", len(all), err)
			}
		})
	}
}

func dirBlobs(t *testing.T) blob.Store {
	t.Helper()
	s, err := dirblob.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// TestArtifactLimits: a file past artifacts.max_file_bytes, past what is
// left of max_job_bytes, or past max_files is refused naming the bound,
// whether its size is known first or found while it streams, and leaves
// nothing; a file of exactly the bound is kept.
func TestArtifactLimits(t *testing.T) {
	r := newArtifactRig(t, dirBlobs(t), func(c *config.Config) {
		c.Artifacts = config.Artifacts{MaxFileBytes: 100, MaxJobBytes: 250, MaxFiles: 3}
	})
	job := r.asJob(t, r.lease.GetJobToken())
	up := func(path string, n int, known bool) error {
		size := int64(-1)
		if known {
			size = int64(n)
		}
		_, err := r.s.UploadArtifact(job, r.jobID(), path, size, bytes.NewReader(bytes.Repeat([]byte{'x'}, n)))
		return err
	}
	refused := func(what string, err error, bound string) {
		t.Helper()
		if !errors.Is(err, ErrArtifactTooLarge) || !errors.Is(err, spool.ErrInvalidArgument) || !strings.Contains(err.Error(), bound) {
			t.Fatalf("%s: %v; want a refusal naming %s", what, err, bound)
		}
	}
	refused("101 bytes, size known", up("big", 101, true), "artifacts.max_file_bytes")
	// A reader that fails if read: a size known to be past the bound is
	// refused before the body is touched.
	if _, err := r.s.UploadArtifact(job, r.jobID(), "big", 1<<40, failingReader{t}); !errors.Is(err, ErrArtifactTooLarge) {
		t.Fatalf("a terabyte announced: %v", err)
	}
	refused("101 bytes, streamed", up("big", 101, false), "artifacts.max_file_bytes")
	if err := up("a", 100, false); err != nil {
		t.Fatalf("exactly the bound: %v", err)
	}
	if err := up("b", 100, true); err != nil {
		t.Fatal(err)
	}
	refused("past the job's total, streamed", up("c", 51, false), "artifacts.max_job_bytes")
	refused("past the job's total, known", up("c", 51, true), "artifacts.max_job_bytes")
	// Replacing a file counts its new size, not both.
	if err := up("b", 100, false); err != nil {
		t.Fatalf("replacing b: %v", err)
	}
	if err := up("c", 50, false); err != nil {
		t.Fatal(err)
	}
	refused("a fourth file", up("d", 1, false), "artifacts.max_files")
	list := r.list(t)
	if len(list) != 3 {
		t.Fatalf("kept %+v; want a, b and c only", list)
	}
	for _, a := range list {
		if a.Path == "big" || a.Path == "d" {
			t.Fatalf("a refused upload left %+v", a)
		}
	}
}

type failingReader struct{ t *testing.T }

func (f failingReader) Read([]byte) (int, error) {
	f.t.Error("the body of an upload known to be too large was read")
	return 0, io.ErrUnexpectedEOF
}

// TestArtifactAccess: a job token keeps artifacts of its own job while
// its attempt runs and does nothing else; keys need to run the job's
// queue to upload, and to read it to list or download.
func TestArtifactAccess(t *testing.T) {
	r := newArtifactRig(t, dirBlobs(t), nil)
	tok := r.lease.GetJobToken()
	if !IsJobToken(tok) {
		t.Fatalf("the lease's job token %q does not look like one", tok)
	}
	job := r.asJob(t, tok)
	body := func() io.Reader { return strings.NewReader("data") }

	// Another job's token is refused.
	if _, err := r.s.EnqueueJob(r.admin, &spoolv1.EnqueueJobRequest{Queue: "builds", Params: &spoolv1.JobParams{Argv: []string{"true"}}}); err != nil {
		t.Fatal(err)
	}
	other := r.dequeue(t)
	if _, err := r.s.UploadArtifact(r.asJob(t, other.GetJobToken()), r.jobID(), "x", -1, body()); !errors.Is(err, spool.ErrPermissionDenied) {
		t.Fatalf("another job's token: %v", err)
	}
	// A job token does nothing but its job's artifacts.
	if _, err := r.s.GetJob(job, &spoolv1.GetJobRequest{JobId: r.jobID()}); !errors.Is(err, spool.ErrPermissionDenied) {
		t.Fatalf("GetJob with a job token: %v", err)
	}
	if _, err := r.s.OpenArtifact(job, r.jobID(), "x"); !errors.Is(err, spool.ErrPermissionDenied) {
		t.Fatalf("a download with a job token: %v", err)
	}
	if _, err := r.s.DequeueJobs(job, &spoolv1.DequeueJobsRequest{Queue: "builds"}); !errors.Is(err, spool.ErrPermissionDenied) {
		t.Fatalf("DequeueJobs with a job token: %v", err)
	}
	// A forged or expired token is refused at the door.
	for name, bad := range map[string]string{
		"forged":  tok[:len(tok)-2] + "AA",
		"expired": r.s.signer.SignJob(token.Job{JobID: r.jobID(), Attempt: 1, Expires: time.Now().Add(-time.Second).Unix()}),
	} {
		if _, err := r.s.Authenticate(WithCredentials(context.Background(), Credentials{Host: "localhost", JobToken: bad})); !errors.Is(err, spool.ErrUnauthenticated) {
			t.Fatalf("a %s job token at the door: %v", name, err)
		}
	}
	// Keys: a reader may not upload; a worker key of another queue may
	// not either, nor list.
	reader := r.key(t, "reader", spoolv1.KeyRole_KEY_ROLE_READ)
	if _, err := r.s.UploadArtifact(reader, r.jobID(), "x", -1, body()); !errors.Is(err, spool.ErrPermissionDenied) {
		t.Fatalf("a read key uploading: %v", err)
	}
	elsewhere := r.key(t, "deployer", spoolv1.KeyRole_KEY_ROLE_WORKER, "deploys")
	if _, err := r.s.UploadArtifact(elsewhere, r.jobID(), "x", -1, body()); !errors.Is(err, spool.ErrPermissionDenied) {
		t.Fatalf("a worker key of another queue uploading: %v", err)
	}
	if _, _, err := r.s.ListArtifacts(elsewhere, r.jobID()); !errors.Is(err, spool.ErrNotFound) {
		t.Fatalf("a key of another queue listing: %v; want the job unseen, as for its log", err)
	}
	builder := r.key(t, "builder", spoolv1.KeyRole_KEY_ROLE_WORKER, "builds")
	if _, err := r.s.UploadArtifact(builder, r.jobID(), "by-key", -1, body()); err != nil {
		t.Fatalf("a worker key of the job's queue: %v", err)
	}
	if _, err := r.s.UploadArtifact(job, r.jobID(), "by-token", -1, body()); err != nil {
		t.Fatal(err)
	}
	for _, bad := range []string{"/etc/passwd", "../up", "a//b", "dir/", "a\\b"} {
		if _, err := r.s.UploadArtifact(job, r.jobID(), bad, -1, body()); !errors.Is(err, spool.ErrInvalidArgument) {
			t.Fatalf("path %q: %v", bad, err)
		}
	}

	// Once the attempt ends, its token keeps nothing more.
	if _, err := r.s.CompleteJob(r.admin, &spoolv1.CompleteJobRequest{TaskToken: r.lease.GetTaskToken(), Result: &spoolv1.JobResult{}}); err != nil {
		t.Fatal(err)
	}
	if _, err := r.s.UploadArtifact(job, r.jobID(), "late", -1, body()); !errors.Is(err, spool.ErrStaleLease) {
		t.Fatalf("the token of an ended attempt: %v", err)
	}
	if got := r.list(t); len(got) != 2 {
		t.Fatalf("kept %+v", got)
	}
}

// TestStaleAttemptToken: the token of an attempt whose lease was lost is
// refused once another attempt runs the job, and that attempt's token
// works.
func TestStaleAttemptToken(t *testing.T) {
	r := newArtifactRig(t, dirBlobs(t), nil)
	first := r.lease
	if _, err := r.s.ReleaseJob(r.admin, &spoolv1.ReleaseJobRequest{TaskToken: first.GetTaskToken()}); err != nil {
		t.Fatal(err)
	}
	second := r.dequeue(t)
	if second.GetJob().GetAttempt() == first.GetJob().GetAttempt() {
		t.Fatalf("the job runs attempt %d again", second.GetJob().GetAttempt())
	}
	if _, err := r.s.UploadArtifact(r.asJob(t, first.GetJobToken()), r.jobID(), "x", -1, strings.NewReader("x")); !errors.Is(err, spool.ErrStaleLease) {
		t.Fatalf("the first attempt's token: %v", err)
	}
	if _, err := r.s.UploadArtifact(r.asJob(t, second.GetJobToken()), r.jobID(), "x", -1, strings.NewReader("x")); err != nil {
		t.Fatalf("the running attempt's token: %v", err)
	}
}

// TestNoBlobStore: a server without a blob store answers artifact calls
// with what to configure.
func TestNoBlobStore(t *testing.T) {
	cfg := config.Default()
	cfg.Auth.Disabled = true
	s := newCore(t, memstore.New(), cfg, make([]byte, 32))
	ctx := WithCredentials(context.Background(), Credentials{Host: "localhost"})
	resp, err := s.EnqueueJob(ctx, &spoolv1.EnqueueJobRequest{Params: &spoolv1.JobParams{Argv: []string{"true"}}})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.ListArtifacts(ctx, resp.GetJob().GetJobId()); !errors.Is(err, spool.ErrUnavailable) || !strings.Contains(err.Error(), "blobs.s3.bucket") {
		t.Fatalf("listing without a blob store: %v", err)
	}
}

// TestArtifactGlobsChecked: params.artifacts are checked as the job is
// enqueued.
func TestArtifactGlobsChecked(t *testing.T) {
	o := newOperator(t)
	for _, g := range []string{"", "/etc/*", "../*", "a/../../b", "[", "a\x00b"} {
		_, err := o.s.EnqueueJob(o.ctx, &spoolv1.EnqueueJobRequest{Params: &spoolv1.JobParams{Argv: []string{"true"}, Artifacts: []string{g}}})
		if !errors.Is(err, spool.ErrInvalidArgument) || !strings.Contains(err.Error(), "params.artifacts[0]") {
			t.Errorf("glob %q: %v", g, err)
		}
	}
	if _, err := o.s.EnqueueJob(o.ctx, &spoolv1.EnqueueJobRequest{Params: &spoolv1.JobParams{Argv: []string{"true"}, Artifacts: []string{"dist/**", "*.html", "out/{a,b}.txt"}}}); err != nil {
		t.Fatal(err)
	}
}

// racingBlobs is a blob store where another upload of the job lands while
// each Put of a key ending in race runs, as one on another server would.
type racingBlobs struct {
	blob.Store
	other string
}

func (r racingBlobs) Put(ctx context.Context, key string, body io.Reader) (blob.Info, error) {
	if strings.HasSuffix(key, "race") {
		if _, err := r.Store.Put(ctx, r.other, strings.NewReader(strings.Repeat("o", 60))); err != nil {
			return blob.Info{}, err
		}
	}
	return r.Store.Put(ctx, key, body)
}

// TestArtifactBoundsHoldAgainstARace: an upload that fit when it started
// but not with one stored meanwhile is not kept.
func TestArtifactBoundsHoldAgainstARace(t *testing.T) {
	blobs := &racingBlobs{Store: dirBlobs(t)}
	r := newArtifactRig(t, blobs, func(c *config.Config) {
		c.Artifacts = config.Artifacts{MaxFileBytes: 100, MaxJobBytes: 100, MaxFiles: 10}
	})
	blobs.other = artifactPrefix(r.jobID()) + "other"
	job := r.asJob(t, r.lease.GetJobToken())
	_, err := r.s.UploadArtifact(job, r.jobID(), "race", 50, strings.NewReader(strings.Repeat("r", 50)))
	if !errors.Is(err, ErrArtifactTooLarge) || !strings.Contains(err.Error(), "stored meanwhile") {
		t.Fatalf("an upload overtaken by another: %v", err)
	}
	if got := r.list(t); len(got) != 1 || got[0].Path != "other" {
		t.Fatalf("kept %+v; want only the other upload", got)
	}
}
