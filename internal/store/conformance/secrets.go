package conformance

import (
	"bytes"
	"context"
	"testing"

	"github.com/google/uuid"
	"google.golang.org/protobuf/proto"

	"github.com/spool-run/spool"
	spoolv1 "github.com/spool-run/spool/gen/spool/v1"
	"github.com/spool-run/spool/internal/seal"
	"github.com/spool-run/spool/internal/store"
)

// secretValue is the plaintext of the suite's secret: its bytes must never
// be found in what a store keeps.
const secretValue = "conformance-secret-VALUE-5f1d2a"

// sealedJob is a job with a secret, sealed as the service seals it: for
// the job's own id (the service names the jobs it gives secrets).
func sealedJob(t *testing.T, queue string) (store.NewJob, *seal.Sealer) {
	t.Helper()
	sl, err := seal.New([]byte("conformance-token-key-of-32-byte"))
	if err != nil {
		t.Fatal(err)
	}
	nj := newJob(queue)
	nj.ID = uuid.Must(uuid.NewV7()).String()
	nj.Params.SecretNames = []string{"DEPLOY_TOKEN"}
	nj.Secrets, err = sl.Seal(nj.ID, map[string]string{"DEPLOY_TOKEN": secretValue})
	if err != nil {
		t.Fatal(err)
	}
	return nj, sl
}

// wantNoSecrets fails if a job as the store returns it carries the sealed
// secrets or the value.
func wantNoSecrets(t *testing.T, what string, j *spoolv1.Job, sealed []byte) {
	t.Helper()
	b, err := proto.Marshal(j)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(b, sealed) || bytes.Contains(b, []byte(secretValue)) {
		t.Fatalf("%s: the job returned carries its secrets", what)
	}
}

// testSecrets: a job's sealed secrets are kept as given beside the job,
// read back only by JobSecrets (no read of the job carries them), kept by
// a repeat of its request, survive a restart, never stored in the clear,
// and deleted with the job.
func testSecrets(t *testing.T, b Backend) {
	s := open(t, b)
	ctx := context.Background()
	q := newQueue()
	nj, sl := sealedJob(t, q)
	nj.RequestID = "secrets-" + q
	j := enqueue(t, s, nj)
	wantNoSecrets(t, "Enqueue", j, nj.Secrets)
	if !proto.Equal(j.GetParams(), nj.Params) {
		t.Fatalf("params stored as %v, want %v (with the secrets' names)", j.GetParams(), nj.Params)
	}
	got, err := s.JobSecrets(ctx, j.GetJobId())
	if err != nil || !bytes.Equal(got, nj.Secrets) {
		t.Fatalf("JobSecrets = %x, %v; want the sealed secrets as given", got, err)
	}
	if m, err := sl.Open(j.GetJobId(), got); err != nil || m["DEPLOY_TOKEN"] != secretValue {
		t.Fatalf("the secrets read back do not open: %v", err)
	}
	if b.RawJob != nil {
		raw := b.RawJob(t, s, j.GetJobId())
		if !bytes.Contains(raw, nj.Secrets) {
			t.Fatal("RawJob does not hold the sealed secrets: it does not show what the store keeps")
		}
		if bytes.Contains(raw, []byte(secretValue)) {
			t.Fatal("the store keeps the secret's value in the clear")
		}
	}

	// A repeat of the request (sealed anew, for another id) is the first
	// job, with the first job's secrets.
	again, _ := sealedJob(t, q)
	again.RequestID = nj.RequestID
	if r, created, err := s.Enqueue(ctx, again); err != nil || created || r.GetJobId() != j.GetJobId() {
		t.Fatalf("repeat: job %s created=%v err=%v; want the first job", r.GetJobId(), created, err)
	}
	if got, err := s.JobSecrets(ctx, j.GetJobId()); err != nil || !bytes.Equal(got, nj.Secrets) {
		t.Fatalf("JobSecrets after a repeat = %x, %v; want the first job's", got, err)
	}
	if _, err := s.JobSecrets(ctx, again.ID); err == nil {
		t.Fatal("a repeat left the secrets of a job it did not create")
	}

	// No read of the job carries them.
	wantNoSecrets(t, "Get", get(t, s, j.GetJobId()), nj.Secrets)
	jobs, _, err := s.List(ctx, store.ListFilter{Queue: q})
	if err != nil || len(jobs) != 1 {
		t.Fatalf("List = %d jobs, %v", len(jobs), err)
	}
	wantNoSecrets(t, "List", jobs[0], nj.Secrets)
	l := leaseOne(t, s, q, shortLease)
	wantNoSecrets(t, "Dequeue", l.Job, nj.Secrets)
	done, err := s.Complete(ctx, l.LeaseRef, &spoolv1.JobResult{})
	if err != nil {
		t.Fatal(err)
	}
	wantNoSecrets(t, "Complete", done, nj.Secrets)

	// A job without secrets has none; an unknown one is not found.
	plain := enqueue(t, s, newJob(q))
	if got, err := s.JobSecrets(ctx, plain.GetJobId()); err != nil || got != nil {
		t.Fatalf("JobSecrets of a job without secrets = %x, %v; want nil", got, err)
	}
	_, err = s.JobSecrets(ctx, "no-such-job")
	wantErr(t, err, spool.ErrNotFound, "JobSecrets of an unknown job")

	if b.Reopen != nil {
		s = b.Reopen(t, s)
		t.Cleanup(func() { _ = s.Close() })
		if got, err := s.JobSecrets(ctx, j.GetJobId()); err != nil || !bytes.Equal(got, nj.Secrets) {
			t.Fatalf("JobSecrets after reopening = %x, %v", got, err)
		}
	}

	// Deleting the job deletes them, from everything the store kept.
	if err := s.DeleteJob(ctx, j.GetJobId()); err != nil {
		t.Fatal(err)
	}
	_, err = s.JobSecrets(ctx, j.GetJobId())
	wantErr(t, err, spool.ErrNotFound, "JobSecrets of a deleted job")
	if b.RawJob != nil {
		if raw := b.RawJob(t, s, j.GetJobId()); bytes.Contains(raw, nj.Secrets) {
			t.Fatal("the sealed secrets are still stored after the job was deleted")
		}
	}
}

// testSecretsOfARerun: a rerun is a new job whose secrets are sealed anew
// for its own id; the job it runs again keeps its own.
func testSecretsOfARerun(t *testing.T, b Backend) {
	s := open(t, b)
	ctx := context.Background()
	q := newQueue()
	first, sl := sealedJob(t, q)
	enqueue(t, s, first)
	rerun := newJob(q)
	rerun.ID = uuid.Must(uuid.NewV7()).String()
	rerun.RerunOf = first.ID
	rerun.Params = proto.CloneOf(first.Params)
	var err error
	if rerun.Secrets, err = sl.Seal(rerun.ID, map[string]string{"DEPLOY_TOKEN": secretValue}); err != nil {
		t.Fatal(err)
	}
	enqueue(t, s, rerun)
	for _, nj := range []store.NewJob{first, rerun} {
		got, err := s.JobSecrets(ctx, nj.ID)
		if err != nil || !bytes.Equal(got, nj.Secrets) {
			t.Fatalf("JobSecrets of %s = %x, %v; want its own", nj.ID, got, err)
		}
	}
	// Sealed for one job, they do not open as another's.
	if _, err := sl.Open(rerun.ID, first.Secrets); err == nil {
		t.Fatal("the first job's secrets open as the rerun's")
	}
}
