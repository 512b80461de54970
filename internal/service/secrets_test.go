package service

import (
	"bytes"
	"errors"
	"maps"
	"slices"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/spool-run/spool"
	spoolv1 "github.com/spool-run/spool/gen/spool/v1"
)

// theSecret is the tests' secret value: no answer may hold its bytes.
const theSecret = "s3cr3t-value-of-the-service-test"

// wantNoValue fails if m, encoded, holds any of the values.
func wantNoValue(t *testing.T, what string, m proto.Message, values ...string) {
	t.Helper()
	b, err := proto.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range values {
		if bytes.Contains(b, []byte(v)) {
			t.Fatalf("%s returns a secret's value", what)
		}
	}
}

func secretRequest(queue, requestID string, secrets map[string]string) *spoolv1.EnqueueJobRequest {
	return &spoolv1.EnqueueJobRequest{Queue: queue, RequestId: requestID, Params: &spoolv1.JobParams{Argv: []string{"./deploy.sh"}}, Secrets: secrets}
}

// TestSecretsRefusedWithAReason: secrets a job cannot have are refused as
// invalid, by name, with what to change, and no error repeats a value.
func TestSecretsRefusedWithAReason(t *testing.T) {
	o := newOperator(t)
	many := map[string]string{}
	for i := range 101 {
		many["S"+strings.Repeat("X", i)] = theSecret
	}
	big := strings.Repeat("v", 30<<10)
	for _, tc := range []struct {
		name    string
		secrets map[string]string
		env     map[string]string
		edit    func(*spoolv1.EnqueueJobRequest)
		want    string
	}{
		{name: "digit first", secrets: map[string]string{"1TOKEN": theSecret}, want: `"1TOKEN" is not an environment variable name`},
		{name: "dash", secrets: map[string]string{"MY-TOKEN": theSecret}, want: `"MY-TOKEN" is not an environment variable name`},
		{name: "short", secrets: map[string]string{"PIN": "123"}, want: "secret PIN is 3 bytes; a secret must be at least 4 bytes"},
		{name: "empty", secrets: map[string]string{"EMPTY": ""}, want: "secret EMPTY is 0 bytes"},
		{name: "long", secrets: map[string]string{"BLOB": strings.Repeat("x", 32<<10+1)}, want: "secret BLOB is 32769 bytes; at most 32768"},
		{name: "NUL", secrets: map[string]string{"TOKEN": theSecret + "\x00"}, want: "secret TOKEN contains a NUL byte"},
		{name: "short line", secrets: map[string]string{"KEY": "-----BEGIN-----\r\nab\r\n-----END-----\n"}, want: "secret KEY: line 2 is 2 bytes"},
		{name: "also in env", secrets: map[string]string{"TOKEN": theSecret}, env: map[string]string{"TOKEN": "x"}, want: "secret TOKEN is also in params.env"},
		{name: "too many", secrets: many, want: "secrets: 101 secrets; at most 100"},
		{name: "too large together", secrets: map[string]string{"A": big, "B": big, "C": big}, want: "bytes of names and values; at most 65536"},
		{name: "names sent wrong", secrets: map[string]string{"TOKEN": theSecret},
			edit: func(r *spoolv1.EnqueueJobRequest) { r.Params.SecretNames = []string{"OTHER"} }, want: "params.secret_names is set by spool"},
		{name: "rejected job", secrets: map[string]string{"TOKEN": theSecret},
			edit: func(r *spoolv1.EnqueueJobRequest) { r.RejectReason = "bad message" }, want: "a job recorded as rejected never runs"},
	} {
		req := secretRequest("q", "", tc.secrets)
		req.Params.Env = tc.env
		if tc.edit != nil {
			tc.edit(req)
		}
		_, err := o.s.EnqueueJob(o.ctx, req)
		if !errors.Is(err, spool.ErrInvalidArgument) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v; want InvalidArgument saying %q", tc.name, err, tc.want)
			continue
		}
		for _, v := range tc.secrets {
			if len(v) >= 4 && strings.Contains(err.Error(), v) {
				t.Errorf("%s: the error repeats the secret's value", tc.name)
			}
		}
	}
	// A value of several lines whose lines are all long enough (or empty)
	// is taken.
	if _, err := o.s.EnqueueJob(o.ctx, secretRequest("q", "", map[string]string{"KEY": "-----BEGIN-----\r\n\r\nMIIBOgIBAAJB\r\n-----END-----\n"})); err != nil {
		t.Fatalf("a key of several lines: %v", err)
	}
}

// TestEnvValueWithNUL: a NUL in an environment value is a bad value, said
// as such, not a bad name.
func TestEnvValueWithNUL(t *testing.T) {
	o := newOperator(t)
	_, err := o.s.EnqueueJob(o.ctx, &spoolv1.EnqueueJobRequest{Params: &spoolv1.JobParams{Argv: []string{"env"},
		Env: map[string]string{"NAME": "VAL\x00UE"}}})
	if !errors.Is(err, spool.ErrInvalidArgument) || !strings.Contains(err.Error(), "the value of NAME contains a NUL byte") ||
		strings.Contains(err.Error(), "name") && strings.Contains(err.Error(), "not a valid") {
		t.Fatalf("env value with a NUL: %v; want the value named as bad", err)
	}
}

// TestSecretsOnlyInTheLease: a job with secrets shows their names and
// never their values, in every answer (the enqueue, its repeat, GetJob,
// ListJobs, the rerun); the worker that leases it, and the one that leases
// its rerun, gets them; what the store keeps is sealed, bound to the job,
// and goes with it.
func TestSecretsOnlyInTheLease(t *testing.T) {
	o := newOperator(t)
	secrets := map[string]string{"DEPLOY_TOKEN": theSecret, "AWS_SECRET": "second-" + theSecret}
	values := slices.Collect(maps.Values(secrets))
	resp, err := o.s.EnqueueJob(o.ctx, secretRequest("deploys", "deploy-1", secrets))
	if err != nil {
		t.Fatal(err)
	}
	j := resp.GetJob()
	if got := j.GetParams().GetSecretNames(); !slices.Equal(got, []string{"AWS_SECRET", "DEPLOY_TOKEN"}) {
		t.Fatalf("secret_names = %v, want the names, sorted", got)
	}
	wantNoValue(t, "EnqueueJob", resp, values...)
	// A repeat of the request (its values need not be compared) is the
	// first job, showing no more.
	again, err := o.s.EnqueueJob(o.ctx, secretRequest("deploys", "deploy-1", map[string]string{"DEPLOY_TOKEN": "other-value", "AWS_SECRET": "other-value"}))
	if err != nil || !again.GetDeduplicated() || again.GetJob().GetJobId() != j.GetJobId() {
		t.Fatalf("repeat: %v, %v; want the first job", again, err)
	}
	wantNoValue(t, "EnqueueJob repeated", again, values...)
	got, err := o.s.GetJob(o.ctx, &spoolv1.GetJobRequest{JobId: j.GetJobId()})
	if err != nil {
		t.Fatal(err)
	}
	wantNoValue(t, "GetJob", got, values...)
	list, err := o.s.ListJobs(o.ctx, &spoolv1.ListJobsRequest{})
	if err != nil || len(list.GetJobs()) != 1 {
		t.Fatalf("ListJobs: %v, %v", list, err)
	}
	wantNoValue(t, "ListJobs", list, values...)

	sealed, err := o.st.JobSecrets(o.ctx, j.GetJobId())
	if err != nil || len(sealed) == 0 {
		t.Fatalf("the store keeps no secrets for the job: %v", err)
	}
	for _, v := range values {
		if bytes.Contains(sealed, []byte(v)) {
			t.Fatal("the store keeps a secret's value in the clear")
		}
	}

	ls := o.dequeue(t, "deploys", 0)
	if len(ls) != 1 || !maps.Equal(ls[0].GetSecrets(), secrets) {
		t.Fatalf("the lease carries secrets %v, want the job's", ls[0].GetSecrets())
	}
	wantNoValue(t, "the lease's job", ls[0].GetJob(), values...)
	if _, err := o.s.CompleteJob(o.ctx, &spoolv1.CompleteJobRequest{TaskToken: ls[0].GetTaskToken(), Result: &spoolv1.JobResult{}}); err != nil {
		t.Fatal(err)
	}

	rerun, err := o.s.RerunJob(o.ctx, &spoolv1.RerunJobRequest{JobId: j.GetJobId()})
	if err != nil {
		t.Fatal(err)
	}
	wantNoValue(t, "RerunJob", rerun, values...)
	if !slices.Equal(rerun.GetJob().GetParams().GetSecretNames(), j.GetParams().GetSecretNames()) {
		t.Fatalf("the rerun's secret_names = %v", rerun.GetJob().GetParams().GetSecretNames())
	}
	resealed, err := o.st.JobSecrets(o.ctx, rerun.GetJob().GetJobId())
	if err != nil || len(resealed) == 0 || bytes.Equal(resealed, sealed) {
		t.Fatalf("the rerun's secrets are not sealed anew for it: %v", err)
	}
	ls = o.dequeue(t, "deploys", 0)
	if len(ls) != 1 || ls[0].GetJob().GetJobId() != rerun.GetJob().GetJobId() || !maps.Equal(ls[0].GetSecrets(), secrets) {
		t.Fatalf("the rerun's lease carries secrets %v, want the first job's", ls[0].GetSecrets())
	}

	if _, err := o.s.DeleteJob(o.ctx, &spoolv1.DeleteJobRequest{JobId: j.GetJobId()}); err != nil {
		t.Fatal(err)
	}
	if _, err := o.st.JobSecrets(o.ctx, j.GetJobId()); !errors.Is(err, spool.ErrNotFound) {
		t.Fatalf("the deleted job's secrets are still kept: %v", err)
	}
}

// TestSecretsSealedUnderAnotherKey: a server whose token key is not the
// one a job's secrets were sealed with cannot run the job or run it again:
// the job is handed back at each lease, counting an attempt, and fails
// saying why once they are used up, instead of running without its
// secrets.
func TestSecretsSealedUnderAnotherKey(t *testing.T) {
	o := newOperator(t)
	other := newCore(t, o.st, o.s.cfg, bytes.Repeat([]byte{7}, 32))
	req := secretRequest("deploys", "", map[string]string{"DEPLOY_TOKEN": theSecret})
	req.MaxAttempts = 2
	resp, err := o.s.EnqueueJob(o.ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	id := resp.GetJob().GetJobId()
	for range 2 {
		r, err := other.DequeueJobs(o.ctx, &spoolv1.DequeueJobsRequest{Queue: "deploys", MaxJobs: 1})
		if err != nil || len(r.GetLeases()) != 0 {
			t.Fatalf("DequeueJobs by a server of another key: %d leases, %v; want none", len(r.GetLeases()), err)
		}
	}
	j, err := o.st.Get(o.ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if j.GetState() != spoolv1.JobState_JOB_STATE_FAILED || !strings.Contains(j.GetResult().GetError()+strings.Join(j.GetNotes(), " "), "cannot be decrypted") {
		t.Fatalf("job is %s (%q, notes %q); want failed, saying its secrets cannot be decrypted", j.GetState(), j.GetResult().GetError(), j.GetNotes())
	}
	_, err = other.RerunJob(o.ctx, &spoolv1.RerunJobRequest{JobId: id})
	if !errors.Is(err, spool.ErrConflict) || !strings.Contains(err.Error(), "cannot be decrypted") {
		t.Fatalf("RerunJob by a server of another key: %v; want a conflict saying why", err)
	}
	if _, err := o.st.JobSecrets(o.ctx, id); err != nil {
		t.Fatalf("the job's secrets: %v", err)
	}
}
