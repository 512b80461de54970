package maintenance_test

import (
	"context"
	"errors"
	"testing"
	"time"

	spoolv1 "github.com/spool-run/spool/gen/spool/v1"
	"github.com/spool-run/spool/internal/maintenance"
	"github.com/spool-run/spool/internal/store"
	"github.com/spool-run/spool/internal/store/storekit"
)

// waitState polls the store until job is in state st, for as long as a
// few reaper rounds take.
func waitState(t *testing.T, c *core, jobID string, st spoolv1.JobState) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		j, err := c.st.Get(c.ctx, jobID)
		if err != nil {
			t.Fatal(err)
		}
		if j.GetState() == st {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("job %s is %s after 10s, want %s", jobID, j.GetState(), st)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// A started reaper settles a lease whose worker vanished, on its own; a
// second Start is refused, and Stop of a service never started, or
// stopped already, returns at once.
func TestReaperSettlesOnItsOwn(t *testing.T) {
	c := newCore(t)
	r := maintenance.NewReaper(maintenance.ReaperOptions{Store: c.st, Outage: maintenance.NewOutage(storekit.Now()), Grace: time.Minute})
	r.Stop() // never started

	job := c.enqueue(t, "ci")
	// The worker vanished: its lease runs out at once.
	if ls, err := c.st.Dequeue(c.ctx, store.DequeueRequest{Queue: "ci", Max: 1, LeaseDuration: time.Millisecond}); err != nil || len(ls) != 1 {
		t.Fatalf("lease: %d, %v", len(ls), err)
	}
	if err := r.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := r.Start(context.Background()); !errors.Is(err, maintenance.ErrStarted) {
		t.Fatalf("a second Start: %v, want ErrStarted", err)
	}
	waitState(t, c, job.GetJobId(), spoolv1.JobState_JOB_STATE_QUEUED)
	r.Stop()
	r.Stop()
}

// blockingSweeps is a store whose sweeps last until their context ends,
// saying when one begins and when it has returned.
type blockingSweeps struct {
	began, returned chan struct{}
}

func (b *blockingSweeps) ExpireLeases(ctx context.Context, _ store.Sweep) (store.Swept, error) {
	close(b.began)
	<-ctx.Done()
	defer close(b.returned)
	return store.Swept{}, ctx.Err()
}

// Stop ends the round under way and returns only once it has: nothing of
// a stopped service is still at work on the store.
func TestStopWaitsForTheRound(t *testing.T) {
	b := &blockingSweeps{began: make(chan struct{}), returned: make(chan struct{})}
	r := maintenance.NewReaper(maintenance.ReaperOptions{Store: b, Outage: maintenance.NewOutage(storekit.Now()), Grace: time.Minute})
	if err := r.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	select {
	case <-b.began:
	case <-time.After(10 * time.Second):
		t.Fatal("no sweep began within 10s")
	}
	r.Stop()
	select {
	case <-b.returned:
	default:
		t.Fatal("Stop returned while the sweep was still running")
	}
}

// A chore configured off (retention 0, no idle timeout) starts nothing,
// and a sweeper started with a context ends when the context does.
func TestChoresOffAndContextEnd(t *testing.T) {
	c := newCore(t)
	off := []maintenance.Service{
		maintenance.NewRetention(maintenance.RetentionOptions{Store: c.st, Jobs: c.svc}),
		maintenance.NewIdleSources(maintenance.IdleOptions{Store: c.st, Jobs: c.svc, Queue: "ingest"}),
	}
	for _, s := range off {
		if err := s.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
		s.Stop()
	}

	ctx, cancel := context.WithCancel(context.Background())
	r := maintenance.NewReaper(maintenance.ReaperOptions{Store: c.st, Outage: maintenance.NewOutage(storekit.Now()), Grace: time.Minute})
	if err := r.Start(ctx); err != nil {
		t.Fatal(err)
	}
	cancel()
	stopped := make(chan struct{})
	go func() { r.Stop(); close(stopped) }()
	select {
	case <-stopped:
	case <-time.After(10 * time.Second):
		t.Fatal("Stop did not return after the start's context ended")
	}
}
