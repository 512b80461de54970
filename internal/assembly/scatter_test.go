package assembly_test

import (
	"context"
	"strings"
	"testing"

	"connectrpc.com/connect"

	spoolv1 "github.com/spool-run/spool/gen/spool/v1"
	"github.com/spool-run/spool/internal/wire"
)

// TestScatterCallsRefuseBadInput: what only a scatter's jobs may carry, or
// only they may ask for, is refused with a reason to a client that is not
// spool's own worker; scatters with impossible specs are refused.
func TestScatterCallsRefuseBadInput(t *testing.T) {
	t.Parallel()
	r := start(t)
	c := newClient(t, r)
	ctx := context.Background()

	_, err := c.EnqueueJob(ctx, connect.NewRequest(&spoolv1.EnqueueJobRequest{
		Params: &spoolv1.JobParams{Argv: []string{"true"}, Scatter: &spoolv1.ScatterMember{ScatterId: "x"}}}))
	wantMessage(t, err, connect.CodeInvalidArgument, "params.scatter is set by spool", "a job claiming to be a scatter's")

	submit(t, c, "true")
	l := dequeue(t, c, 10)
	_, err = c.GetJobInput(ctx, connect.NewRequest(&spoolv1.GetJobInputRequest{TaskToken: l.GetTaskToken()}))
	wantMessage(t, err, connect.CodeInvalidArgument, "has no input", "the input of a job outside any scatter")

	for _, tc := range []struct{ out, want string }{
		{"not json", "not valid JSON"},
		{`"` + strings.Repeat("x", 300<<10) + `"`, "a result may hold at most"},
	} {
		_, err = c.CompleteJob(ctx, connect.NewRequest(&spoolv1.CompleteJobRequest{TaskToken: l.GetTaskToken(), Result: &spoolv1.JobResult{Output: tc.out}}))
		wantMessage(t, err, connect.CodeInvalidArgument, tc.want, "a result document "+tc.want)
	}
	if _, err := c.CompleteJob(ctx, connect.NewRequest(&spoolv1.CompleteJobRequest{TaskToken: l.GetTaskToken(),
		Result: &spoolv1.JobResult{Output: `{"ok":true}`}})); err != nil {
		t.Fatal(err)
	}
	_, err = c.GetJobInput(ctx, connect.NewRequest(&spoolv1.GetJobInputRequest{TaskToken: l.GetTaskToken()}))
	wantCode(t, err, connect.CodeFailedPrecondition, "the input of a finished job")

	sc, err := wire.DialScatters(r.URL, wire.Options{APIKey: r.AdminKey})
	if err != nil {
		t.Fatal(err)
	}
	scatter := func(spec *spoolv1.ScatterSpec, batches ...string) error {
		_, err := sc.CreateScatter(ctx, connect.NewRequest(&spoolv1.CreateScatterRequest{Spec: spec, Batches: batches}))
		return err
	}
	params := &spoolv1.JobParams{Argv: []string{"true"}}
	pct := float32(101)
	for _, tc := range []struct {
		name    string
		spec    *spoolv1.ScatterSpec
		batches []string
		want    string
	}{
		{"no batches", &spoolv1.ScatterSpec{Params: params}, nil, "at least one batch"},
		{"an empty batch", &spoolv1.ScatterSpec{Params: params}, []string{"[1]", "[]"}, "batches[1]: empty"},
		{"a batch that is not an array", &spoolv1.ScatterSpec{Params: params}, []string{`{"a":1}`}, "not a JSON array"},
		{"batch input not JSON", &spoolv1.ScatterSpec{Params: params, BatchInput: "{"}, []string{"[1]"}, "batch_input is not valid JSON"},
		{"a negative limit", &spoolv1.ScatterSpec{Params: params, MaxConcurrency: -1}, []string{"[1]"}, "max_concurrency"},
		{"a percentage over 100", &spoolv1.ScatterSpec{Params: params, ToleratedFailurePercentage: &pct}, []string{"[1]"}, "between 0 and 100"},
		{"nothing to run", &spoolv1.ScatterSpec{}, []string{"[1]"}, "say what to run"},
		{"stdin of its own", &spoolv1.ScatterSpec{Params: &spoolv1.JobParams{Argv: []string{"cat"}, Stdin: []byte("x")}}, []string{"[1]"}, "read their input document on stdin"},
	} {
		wantMessage(t, scatter(tc.spec, tc.batches...), connect.CodeInvalidArgument, tc.want, tc.name)
	}
}

func wantMessage(t *testing.T, err error, code connect.Code, msg, what string) {
	t.Helper()
	if connect.CodeOf(err) != code || !strings.Contains(err.Error(), msg) {
		t.Fatalf("%s: got %v, want %s saying %q", what, err, code, msg)
	}
}
