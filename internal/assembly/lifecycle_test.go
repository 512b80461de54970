package assembly_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"connectrpc.com/connect"

	"github.com/spool-run/spool"
	"github.com/spool-run/spool/client"
	spoolv1 "github.com/spool-run/spool/gen/spool/v1"
	"github.com/spool-run/spool/server"
)

// TestRequestIDNamesOneRequest: the same request_id with the same request
// returns the first job; with a different one it is refused, naming the
// first job, as idempotency keys are in payment APIs.
func TestRequestIDNamesOneRequest(t *testing.T) {
	t.Parallel()
	r := start(t)
	c := newClient(t, r)
	ctx := context.Background()
	first, dedup, err := c.Submit(ctx, client.SubmitParams{Argv: []string{"make", "build"}, RequestID: "build-42"})
	if err != nil || dedup {
		t.Fatalf("first submit: %v dedup=%v", err, dedup)
	}
	again, dedup, err := c.Submit(ctx, client.SubmitParams{Argv: []string{"make", "build"}, RequestID: "build-42"})
	if err != nil || !dedup || again.ID != first.ID {
		t.Fatalf("same request again: %v dedup=%v", err, dedup)
	}
	_, _, err = c.Submit(ctx, client.SubmitParams{Argv: []string{"make", "deploy"}, RequestID: "build-42"})
	if !errors.Is(err, spool.ErrAlreadyExists) || connect.CodeOf(err) != connect.CodeAlreadyExists || !strings.Contains(err.Error(), first.ID) {
		t.Fatalf("another request with the same id: %v, want AlreadyExists naming %s", err, first.ID)
	}
	_, _, err = c.Submit(ctx, client.SubmitParams{Argv: []string{"make", "build"}, RequestID: "build-42", Retries: 2})
	if !errors.Is(err, spool.ErrAlreadyExists) {
		t.Fatalf("the same command with other budgets: %v, want AlreadyExists", err)
	}
}

// TestHeartbeatWaitsForNews: a heartbeat that asks to wait is held until
// the job is cancelled (or its watched state changes), then answers at once;
// the lease's heartbeat interval is derived from its length.
func TestHeartbeatWaitsForNews(t *testing.T) {
	t.Parallel()
	r := start(t, func(c *server.Config) {
		c.Execution.HeartbeatInterval, c.Jobs.Lease = 30*time.Second, 120*time.Second
	})
	c := newClient(t, r)
	ctx := context.Background()
	submit(t, c, "sleep", "60")
	if got := dequeue(t, c, 10).GetHeartbeatIntervalSeconds(); got != 5 {
		t.Fatalf("heartbeat interval %d with a 10 s lease and 30 s configured, want 5 (half the lease)", got)
	}
	j := submit(t, c, "sleep", "60")
	lease := dequeue(t, c, 100)
	if got := lease.GetHeartbeatIntervalSeconds(); got != 30 {
		t.Fatalf("heartbeat interval %d with a 100 s lease and 30 s configured, want 30", got)
	}
	type answer struct {
		resp *connect.Response[spoolv1.UpdateJobVisibilityResponse]
		err  error
	}
	got := make(chan answer, 1)
	go func() {
		resp, err := c.UpdateJobVisibility(ctx, connect.NewRequest(&spoolv1.UpdateJobVisibilityRequest{
			TaskToken: lease.GetTaskToken(), VisibilityTimeoutSeconds: 100, WaitSeconds: 30}))
		got <- answer{resp, err}
	}()
	if _, err := c.Cancel(ctx, j.ID, "enough"); err != nil {
		t.Fatal(err)
	}
	select {
	case a := <-got:
		if a.err != nil || !a.resp.Msg.GetCancelRequested() {
			t.Fatalf("held heartbeat: %v %v", a.resp, a.err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("a held heartbeat did not answer when the job was cancelled (it waits up to 30 s otherwise)")
	}
}

// TestReportUndeliveredWithStaleToken: an attempt that lost its lease can
// still say, with its token, how much output it could not deliver; the
// note goes on the job. A forged token cannot.
func TestReportUndeliveredWithStaleToken(t *testing.T) {
	t.Parallel()
	r := start(t)
	c := newClient(t, r)
	ctx := context.Background()
	j := submit(t, c, "true")
	l1 := dequeue(t, c, 2)
	if l2 := dequeue(t, c, 10); l2.GetJob().GetAttempt() != 2 { // once attempt 1's lease has run out
		t.Fatalf("redelivered as attempt %d", l2.GetJob().GetAttempt())
	}
	resp, err := c.ReportUndelivered(ctx, connect.NewRequest(&spoolv1.ReportUndeliveredRequest{TaskToken: l1.GetTaskToken(),
		Lines: 11, KeptAt: "host:/var/lib/spool/undelivered/x"}))
	if err != nil {
		t.Fatal(err)
	}
	notes := resp.Msg.GetJob().GetNotes()
	if len(notes) != 1 || !strings.HasPrefix(notes[0], "attempt 1: 11 lines could not be delivered") || !strings.Contains(notes[0], "host:/var/lib/spool") {
		t.Fatalf("notes %q", notes)
	}
	got, err := c.Job(ctx, j.ID)
	if err != nil || len(got.Notes) != 1 {
		t.Fatalf("the note is not kept: %v %v", got.Notes, err)
	}
	_, err = c.ReportUndelivered(ctx, connect.NewRequest(&spoolv1.ReportUndeliveredRequest{TaskToken: "st1.eyJqIjoiYSJ9.AAAA", Lines: 1}))
	wantCode(t, err, connect.CodeInvalidArgument, "report with a forged token")
}
