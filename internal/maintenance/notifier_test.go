package maintenance_test

import (
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	spoolv1 "github.com/spool-run/spool/gen/spool/v1"
	"github.com/spool-run/spool/internal/maintenance"
	"github.com/spool-run/spool/internal/webhook"
)

// A started notifier tells a job's URL of its end on its own.
func TestNotifierSends(t *testing.T) {
	c := newCore(t)
	got := make(chan string, 1)
	rc := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case got <- r.Header.Get("Spool-Event"):
		default:
		}
	}))
	defer rc.Close()
	resp, err := c.svc.EnqueueJob(c.ctx, &spoolv1.EnqueueJobRequest{Queue: "ci", Params: &spoolv1.JobParams{Argv: []string{"true"}}, Notify: []string{rc.URL}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.svc.CancelJob(c.ctx, &spoolv1.CancelJobRequest{JobId: resp.GetJob().GetJobId()}); err != nil {
		t.Fatal(err)
	}
	n := maintenance.NewNotifier(maintenance.NotifierOptions{Deliverer: webhook.New(webhook.Options{Store: c.st, AllowPrivate: true})})
	if err := n.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	defer n.Stop()
	select {
	case ev := <-got:
		if ev != "job.cancelled" {
			t.Errorf("Spool-Event %q, want job.cancelled", ev)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no webhook within 10s")
	}
}
