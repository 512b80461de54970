package client_test

import (
	"context"
	"testing"

	"github.com/spool-run/spool/client"
	"github.com/spool-run/spool/spooltest"
)

// TestQueuesEndedPerMinute: asked for, a queue's jobs ended in the hour
// come minute by minute, 60 of them; Queues leaves them out.
func TestQueuesEndedPerMinute(t *testing.T) {
	srv := spooltest.NewServer(t)
	c := srv.Client()
	ctx := context.Background()
	for range 2 {
		if _, _, err := c.Submit(ctx, client.SubmitParams{Queue: "ci", Argv: []string{"make"}}); err != nil {
			t.Fatal(err)
		}
		l := spooltest.LeaseJob(t, srv, "ci")
		l.Begin()
		l.End(0)
	}
	qs, _, err := c.QueuesEndedPerMinute(ctx)
	if err != nil || len(qs) != 1 {
		t.Fatalf("queues: %v, %v", qs, err)
	}
	succeeded := 0
	for _, m := range qs[0].EndedPerMinute {
		succeeded += m.Succeeded
	}
	if len(qs[0].EndedPerMinute) != 60 || succeeded != 2 {
		t.Fatalf("%d minutes holding %d succeeded; want 60 holding 2", len(qs[0].EndedPerMinute), succeeded)
	}
	plain, _, err := c.Queues(ctx)
	if err != nil || len(plain) != 1 || plain[0].EndedPerMinute != nil {
		t.Fatalf("Queues: %v, %v; want ci without minutes", plain, err)
	}
}
