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

	"github.com/spool-run/spool"
	spoolv1 "github.com/spool-run/spool/gen/spool/v1"
	"github.com/spool-run/spool/internal/blob"
	"github.com/spool-run/spool/internal/blob/dirblob"
	"github.com/spool-run/spool/internal/blob/pgblob"
	"github.com/spool-run/spool/internal/config"
	"github.com/spool-run/spool/internal/scatter"
	"github.com/spool-run/spool/internal/store"
	"github.com/spool-run/spool/internal/store/backends/pgstore/pgtest"
)

// onBlobStores runs test on a directory blob store and on a PostgreSQL
// one (a new database of the test server).
func onBlobStores(t *testing.T, test func(t *testing.T, blobs blob.Store)) {
	for _, b := range []struct {
		name string
		open func(t *testing.T) blob.Store
	}{
		{"dir", func(t *testing.T) blob.Store {
			s, err := dirblob.Open(t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			return s
		}},
		{"postgres", func(t *testing.T) blob.Store {
			s, err := pgblob.Open(t.Context(), pgtest.NewDatabase(t))
			if err != nil {
				t.Fatal(err)
			}
			return s
		}},
	} {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			blobs := b.open(t)
			t.Cleanup(func() { blobs.Close() })
			test(t, blobs)
		})
	}
}

// stdinCore is a core without keys over an in-memory store and blobs.
func stdinCore(t *testing.T, blobs blob.Store, tune func(*config.Config)) *operator {
	t.Helper()
	o := newOperator(t)
	cfg := config.Default()
	cfg.Auth.Disabled = true
	if tune != nil {
		tune(cfg)
	}
	o.s = New(Options{Store: o.st, Config: cfg, Signer: o.s.signer, Sealer: o.s.sealer, Blobs: blobs})
	return o
}

// bigStdin is n bytes no job record holds, not all alike.
func bigStdin(n int) []byte {
	b := bytes.Repeat([]byte("0123456789abcdef"), n/16+1)[:n]
	for i := 0; i < n; i += 4099 {
		b[i] = byte(i)
	}
	return b
}

func sha(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// keys lists the blobs under prefix.
func keys(t *testing.T, blobs blob.Store, prefix string) []string {
	t.Helper()
	var out []string
	for info, err := range blobs.List(context.Background(), prefix) {
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, info.Key)
	}
	return out
}

// A stdin uploaded ahead of its job is copied beside the job when it is
// enqueued, and only the worker holding the job's lease reads it back,
// byte for byte.
func TestUploadedStdinReachesTheLeaseHolder(t *testing.T) {
	onBlobStores(t, func(t *testing.T, blobs blob.Store) {
		o := stdinCore(t, blobs, nil)
		data := bigStdin(3<<20 + 5)
		up, err := o.s.Upload(o.ctx, bytes.NewReader(data))
		if err != nil {
			t.Fatal(err)
		}
		if up.Size != int64(len(data)) || up.SHA256 != sha(data) {
			t.Fatalf("upload stored %d bytes %s; want %d %s", up.Size, up.SHA256, len(data), sha(data))
		}
		// Secrets are sealed to the job's id, which the stdin's copy
		// must share.
		secrets := map[string]string{"TOKEN": "a-secret-value"}
		resp, err := o.s.EnqueueJob(o.ctx, &spoolv1.EnqueueJobRequest{Queue: "ci", Params: &spoolv1.JobParams{Argv: []string{"wc", "-c"}, StdinUpload: up.ID}, Secrets: secrets})
		if err != nil {
			t.Fatal(err)
		}
		job := resp.GetJob()
		p := job.GetParams()
		if p.GetStdinUpload() != "" || p.GetStdinSize() != int64(len(data)) || p.GetStdinSha256() != sha(data) || len(p.GetStdin()) != 0 {
			t.Fatalf("the job's params after enqueue: upload %q size %d sha %s inline %d", p.GetStdinUpload(), p.GetStdinSize(), p.GetStdinSha256(), len(p.GetStdin()))
		}
		if got := keys(t, blobs, "jobs/"); len(got) != 1 || got[0] != "jobs/"+job.GetJobId()+"/stdin" {
			t.Fatalf("blobs beside jobs: %v", got)
		}

		leases := o.dequeue(t, "ci", 0)
		if len(leases) != 1 {
			t.Fatalf("%d leases, want 1", len(leases))
		}
		lease := leases[0]
		if got := lease.GetSecrets(); len(got) != 1 || got["TOKEN"] != secrets["TOKEN"] {
			t.Fatalf("the lease's secrets: %v", got)
		}
		if _, _, err := o.s.JobStdin(o.ctx, "another-job", lease.GetTaskToken()); !errors.Is(err, spool.ErrPermissionDenied) {
			t.Errorf("another job's stdin with this job's token: %v", err)
		}
		r, info, err := o.s.JobStdin(o.ctx, job.GetJobId(), lease.GetTaskToken())
		if err != nil {
			t.Fatal(err)
		}
		got, err := io.ReadAll(r)
		r.Close()
		if err != nil || !bytes.Equal(got, data) || info.Size != int64(len(data)) {
			t.Fatalf("the stdin read back: %d bytes (%v), info %d; want %d", len(got), err, info.Size, len(data))
		}
		if _, _, err := o.s.JobStdin(o.ctx, job.GetJobId(), ""); !errors.Is(err, spool.ErrInvalidArgument) {
			t.Errorf("without a task token: %v", err)
		}
	})
}

// Deleting a job deletes its blobs; a rerun has a copy of its own, which
// outlives the first job and goes with the rerun.
func TestJobsBlobsGoWithTheJob(t *testing.T) {
	onBlobStores(t, func(t *testing.T, blobs blob.Store) {
		o := stdinCore(t, blobs, nil)
		data := bigStdin(300 << 10)
		up, err := o.s.Upload(o.ctx, bytes.NewReader(data))
		if err != nil {
			t.Fatal(err)
		}
		first := o.enqueueUpload(t, up.ID, "")
		o.cancel(t, first)
		// Another file of the job's, as artifacts are kept.
		if _, err := blobs.Put(o.ctx, "jobs/"+first+"/artifacts/report.html", strings.NewReader("<p>")); err != nil {
			t.Fatal(err)
		}
		rerun, err := o.s.RerunJob(o.ctx, &spoolv1.RerunJobRequest{JobId: first})
		if err != nil {
			t.Fatal(err)
		}
		second := rerun.GetJob().GetJobId()
		if rerun.GetJob().GetParams().GetStdinSha256() != sha(data) {
			t.Fatalf("the rerun's stdin: %v", rerun.GetJob().GetParams())
		}
		if _, err := o.s.DeleteJob(o.ctx, &spoolv1.DeleteJobRequest{JobId: first}); err != nil {
			t.Fatal(err)
		}
		if got := keys(t, blobs, "jobs/"); len(got) != 1 || got[0] != "jobs/"+second+"/stdin" {
			t.Fatalf("blobs after the first job was deleted: %v; want the rerun's stdin alone", got)
		}
		stored, err := blobs.Stat(o.ctx, "jobs/"+second+"/stdin")
		if err != nil || stored.SHA256 != sha(data) {
			t.Fatalf("the rerun's stdin: %+v %v", stored, err)
		}
		o.cancel(t, second)
		// The retention sweeper's way.
		if err := o.s.RemoveJob(o.ctx, second, "retention"); err != nil {
			t.Fatal(err)
		}
		if got := keys(t, blobs, "jobs/"); len(got) != 0 {
			t.Fatalf("blobs after both jobs went: %v", got)
		}
	})
}

// A request repeated with its request_id (a client trying again) finds
// the first job, and leaves no second copy of the stdin behind.
func TestRepeatedUploadEnqueueKeepsOneCopy(t *testing.T) {
	onBlobStores(t, func(t *testing.T, blobs blob.Store) {
		o := stdinCore(t, blobs, nil)
		up, err := o.s.Upload(o.ctx, bytes.NewReader(bigStdin(1<<20)))
		if err != nil {
			t.Fatal(err)
		}
		a := o.enqueueUpload(t, up.ID, "once")
		b := o.enqueueUpload(t, up.ID, "once")
		if a != b {
			t.Fatalf("a repeat made job %s beside %s", b, a)
		}
		if got := keys(t, blobs, "jobs/"); len(got) != 1 {
			t.Fatalf("blobs beside jobs after a repeat: %v", got)
		}
	})
}

// failingBlobs fails every DeletePrefix while fail is set.
type failingBlobs struct {
	blob.Store
	fail bool
}

func (f *failingBlobs) DeletePrefix(ctx context.Context, prefix string) (int, error) {
	if f.fail {
		return 0, errors.New("the disk is away")
	}
	return f.Store.DeletePrefix(ctx, prefix)
}

// A job whose files cannot be deleted stays, with its files, to be
// deleted by the next try: nothing is left behind that no job names.
func TestBlobDeletionFailureKeepsTheJob(t *testing.T) {
	dir, err := dirblob.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	blobs := &failingBlobs{Store: dir, fail: true}
	o := stdinCore(t, blobs, nil)
	up, err := o.s.Upload(o.ctx, bytes.NewReader(bigStdin(300<<10)))
	if err != nil {
		t.Fatal(err)
	}
	id := o.enqueueUpload(t, up.ID, "")
	o.cancel(t, id)
	if err := o.s.RemoveJob(o.ctx, id, "retention"); err == nil {
		t.Fatal("a job was removed though its files could not be")
	}
	if _, err := o.st.Get(o.ctx, id); err != nil {
		t.Fatalf("the job after its files failed to go: %v", err)
	}
	if got := keys(t, dir, "jobs/"); len(got) != 1 {
		t.Fatalf("its files: %v", got)
	}
	blobs.fail = false
	if err := o.s.RemoveJob(o.ctx, id, "retention"); err != nil {
		t.Fatal(err)
	}
	if _, err := o.st.Get(o.ctx, id); !errors.Is(err, spool.ErrNotFound) {
		t.Fatalf("the job after the second try: %v", err)
	}
	if got := keys(t, dir, "jobs/"); len(got) != 0 {
		t.Fatalf("its files after the second try: %v", got)
	}
}

// What cannot be taken is refused, naming why: an upload over
// jobs.max_stdin_bytes (and nothing of it kept), an upload no one made,
// the fields only spool sets, a server without blobs.
func TestUploadRefusals(t *testing.T) {
	dir, err := dirblob.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	o := stdinCore(t, dir, func(c *config.Config) { c.Jobs.MaxStdinBytes = 1000 })
	if _, err := o.s.Upload(o.ctx, bytes.NewReader(bigStdin(1001))); !errors.Is(err, spool.ErrInvalidArgument) || !strings.Contains(err.Error(), "jobs.max_stdin_bytes") {
		t.Errorf("an upload over the limit: %v", err)
	}
	if got := keys(t, dir, ""); len(got) != 0 {
		t.Errorf("an upload over the limit left %v", got)
	}
	if _, err := o.s.Upload(o.ctx, bytes.NewReader(bigStdin(1000))); err != nil {
		t.Errorf("an upload at the limit: %v", err)
	}
	for name, p := range map[string]*spoolv1.JobParams{
		"unknown upload": {Argv: []string{"wc"}, StdinUpload: "NOSUCHUPLOAD"},
		"size by client": {Argv: []string{"wc"}, StdinSize: 10},
		"both stdins":    {Argv: []string{"wc"}, StdinUpload: "X", Stdin: []byte("x")},
		"bad upload id":  {Argv: []string{"wc"}, StdinUpload: "../../etc/passwd"},
	} {
		if _, err := o.s.EnqueueJob(o.ctx, &spoolv1.EnqueueJobRequest{Params: p}); err == nil || !errors.Is(err, spool.ErrInvalidArgument) && !errors.Is(err, spool.ErrNotFound) {
			t.Errorf("%s: %v", name, err)
		}
	}
	if got := keys(t, dir, "jobs/"); len(got) != 0 {
		t.Errorf("refused enqueues left %v", got)
	}

	none := newOperator(t)
	_, err = none.s.Upload(none.ctx, strings.NewReader("data"))
	if !errors.Is(err, spool.ErrInvalidArgument) || !strings.Contains(err.Error(), "blobs.s3.bucket") || !strings.Contains(err.Error(), "256 KiB") {
		t.Errorf("an upload to a server without blobs: %v", err)
	}
}

// Uploads are kept a day for a job to take them, then swept.
func TestSweepUploads(t *testing.T) {
	dir, err := dirblob.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	o := stdinCore(t, dir, nil)
	up, err := o.s.Upload(o.ctx, strings.NewReader("data"))
	if err != nil {
		t.Fatal(err)
	}
	id := o.enqueueUpload(t, up.ID, "")
	if n, err := o.s.SweepUploads(o.ctx, time.Now().Add(-UploadMaxAge)); err != nil || n != 0 {
		t.Fatalf("a sweep the day of the upload deleted %d, %v", n, err)
	}
	if n, err := o.s.SweepUploads(o.ctx, time.Now().Add(time.Minute)); err != nil || n != 1 {
		t.Fatalf("a sweep a day later deleted %d, %v; want the 1 upload", n, err)
	}
	if got := keys(t, dir, ""); len(got) != 1 || got[0] != "jobs/"+id+"/stdin" {
		t.Fatalf("after the sweep: %v; want the job's own copy alone", got)
	}
}

// Scatters and schedules make many jobs of one spec: none takes an
// upload, which is one job's.
func TestUploadRefusedBeyondOneJob(t *testing.T) {
	dir, err := dirblob.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	o := stdinCore(t, dir, nil)
	p := &spoolv1.JobParams{Argv: []string{"wc"}, StdinUpload: "ABC"}
	if _, err := o.s.CreateSchedule(o.ctx, &spoolv1.CreateScheduleRequest{Schedule: &spoolv1.Schedule{Name: "nightly", Cron: "0 3 * * *", Job: &spoolv1.EnqueueJobRequest{Params: p}}}); !errors.Is(err, spool.ErrInvalidArgument) || !strings.Contains(err.Error(), "stdin_upload") {
		t.Errorf("a schedule with an upload: %v", err)
	}
	if err := o.s.checkScatterSpec(&spoolv1.ScatterSpec{Params: p}); !errors.Is(err, spool.ErrInvalidArgument) || !strings.Contains(err.Error(), "stdin_upload") {
		t.Errorf("a scatter with an upload: %v", err)
	}
}

func (o *operator) enqueueUpload(t *testing.T, upload, requestID string) string {
	t.Helper()
	resp, err := o.s.EnqueueJob(o.ctx, &spoolv1.EnqueueJobRequest{Queue: "ci", RequestId: requestID, Params: &spoolv1.JobParams{Argv: []string{"wc", "-c"}, StdinUpload: upload}})
	if err != nil {
		t.Fatal(err)
	}
	return resp.GetJob().GetJobId()
}

func (o *operator) cancel(t *testing.T, id string) {
	t.Helper()
	if _, err := o.s.CancelJob(o.ctx, &spoolv1.CancelJobRequest{JobId: id}); err != nil {
		t.Fatal(err)
	}
}

// The batches cut from a scatter's S3 items go when retention takes the
// job of its first batch (the scatter has ended); an operator's delete of
// that job leaves them, for a redrive of the scatter's other batches.
func TestScatterBatchesGoWithRetention(t *testing.T) {
	onBlobStores(t, func(t *testing.T, blobs blob.Store) {
		o := stdinCore(t, blobs, nil)
		const id = "01a2205f-db3b-72ce-88c7-21a8d53b9a69"
		rec := &store.ScatterRecord{Scatter: &spoolv1.Scatter{ScatterId: id, State: spoolv1.ScatterState_SCATTER_STATE_SUCCEEDED,
			Spec: &spoolv1.ScatterSpec{Source: &spoolv1.ScatterSource{Items: "s3://items/in.jsonl"}}}}
		if err := o.st.CreateScatter(o.ctx, rec, nil); err != nil {
			t.Fatal(err)
		}
		for i := range int32(2) {
			if _, err := blobs.Put(o.ctx, scatter.BatchKey(id, i), strings.NewReader(`[1]`)); err != nil {
				t.Fatal(err)
			}
		}
		ended := func(name string, batch int32) string {
			j, _, err := o.st.Enqueue(o.ctx, store.NewJob{ID: id + "." + name, Queue: "q", MaxAttempts: 1, RejectReason: "ended", Execution: config.Default().ExecutionConfig(),
				Params: &spoolv1.JobParams{Argv: []string{"true"}, Scatter: &spoolv1.ScatterMember{ScatterId: id, BatchIndex: batch, BatchCount: 2}}})
			if err != nil {
				t.Fatal(err)
			}
			return j.GetJobId()
		}
		if _, err := o.s.DeleteJob(o.ctx, &spoolv1.DeleteJobRequest{JobId: ended("0", 0)}); err != nil {
			t.Fatal(err)
		}
		if got := keys(t, blobs, scatter.BlobsPrefix(id)); len(got) != 2 {
			t.Fatalf("the scatter's batches after an operator deleted a job: %v", got)
		}
		if err := o.s.RemoveJob(o.ctx, ended("1", 1), "retention"); err != nil {
			t.Fatal(err)
		}
		if got := keys(t, blobs, scatter.BlobsPrefix(id)); len(got) != 2 {
			t.Fatalf("the scatter's batches after retention took batch 1's job: %v", got)
		}
		if err := o.s.RemoveJob(o.ctx, ended("0.r1", 0), "retention"); err != nil {
			t.Fatal(err)
		}
		if got := keys(t, blobs, scatter.BlobsPrefix(id)); len(got) != 0 {
			t.Fatalf("the scatter's batches after retention took batch 0's job: %v", got)
		}
	})
}
