package service

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/spool-run/spool"
	spoolv1 "github.com/spool-run/spool/gen/spool/v1"
	"github.com/spool-run/spool/internal/config"
	"github.com/spool-run/spool/internal/seal"
	"github.com/spool-run/spool/internal/store"
	"github.com/spool-run/spool/internal/store/backends/memstore"
	"github.com/spool-run/spool/internal/store/backends/pgstore"
	"github.com/spool-run/spool/internal/store/backends/pgstore/pgtest"
	"github.com/spool-run/spool/internal/token"
)

// operator is a core over an in-memory store, without keys.
type operator struct {
	s   *Service
	st  *memstore.Store
	ctx context.Context
}

func newOperator(t *testing.T) *operator {
	t.Helper()
	cfg := config.Default()
	cfg.Auth.Disabled = true
	o := &operator{st: memstore.New(), ctx: WithCredentials(context.Background(), Credentials{Host: "localhost"})}
	o.s = newCore(t, o.st, cfg, make([]byte, 32))
	return o
}

// newCore is a core over st whose tokens and secrets are keyed with key.
func newCore(t *testing.T, st store.JobStore, cfg *config.Config, key []byte) *Service {
	t.Helper()
	signer, err := token.NewSigner(key)
	if err != nil {
		t.Fatal(err)
	}
	sealer, err := seal.New(key)
	if err != nil {
		t.Fatal(err)
	}
	return New(Options{Store: st, Config: cfg, Signer: signer, Sealer: sealer})
}

func (o *operator) enqueue(t *testing.T, queue string) *spoolv1.Job {
	t.Helper()
	resp, err := o.s.EnqueueJob(o.ctx, &spoolv1.EnqueueJobRequest{Queue: queue, Params: &spoolv1.JobParams{Argv: []string{"make", "test"}}, Retries: 2})
	if err != nil {
		t.Fatal(err)
	}
	return resp.GetJob()
}

func (o *operator) dequeue(t *testing.T, queue string, wait int32) []*spoolv1.JobLease {
	t.Helper()
	resp, err := o.s.DequeueJobs(o.ctx, &spoolv1.DequeueJobsRequest{Queue: queue, MaxJobs: 1, WaitSeconds: wait, WorkerId: "w1"})
	if err != nil {
		t.Fatal(err)
	}
	return resp.GetLeases()
}

// run leases queue's next job and completes it with exit code.
func (o *operator) run(t *testing.T, queue string, exit int32) *spoolv1.Job {
	t.Helper()
	ls := o.dequeue(t, queue, 0)
	if len(ls) != 1 {
		t.Fatalf("%d leases, want 1", len(ls))
	}
	resp, err := o.s.CompleteJob(o.ctx, &spoolv1.CompleteJobRequest{TaskToken: ls[0].GetTaskToken(), Result: &spoolv1.JobResult{ExitCode: exit}})
	if err != nil {
		t.Fatal(err)
	}
	return resp.GetJob()
}

// A paused queue gives no worker a job, also one that was waiting when the
// pause came (the lease the store granted it is handed back), and a resume
// on this server wakes the waiting worker at once.
func TestPauseStopsLeases(t *testing.T) {
	o := newOperator(t)
	j := o.enqueue(t, "builds")
	if _, err := o.s.PauseQueue(o.ctx, &spoolv1.PauseQueueRequest{Name: "builds"}); err != nil {
		t.Fatal(err)
	}
	if ls := o.dequeue(t, "builds", 0); len(ls) != 0 {
		t.Fatalf("a paused queue gave %d jobs", len(ls))
	}
	// A lease granted while the pause was being written goes back.
	ls, err := o.st.Dequeue(o.ctx, store.DequeueRequest{Queue: "builds", Max: 1, LeaseDuration: time.Minute})
	if err != nil || len(ls) != 1 {
		t.Fatalf("store dequeue: %d, %v", len(ls), err)
	}
	kept, err := o.s.handBackPaused(o.ctx, "builds", ls)
	if err != nil || len(kept) != 0 {
		t.Fatalf("handBackPaused kept %d leases, %v", len(kept), err)
	}
	got, err := o.st.Get(o.ctx, j.GetJobId())
	if err != nil || got.GetState() != spoolv1.JobState_JOB_STATE_QUEUED || got.GetReleasedAttempts() != 1 {
		t.Fatalf("the job handed back: %v, %v", got, err)
	}

	// A worker waiting on the paused queue gets the job as soon as it is
	// resumed, well before its 20-second wait is over.
	type dequeued struct {
		resp *spoolv1.DequeueJobsResponse
		err  error
	}
	done := make(chan dequeued, 1)
	go func() {
		resp, err := o.s.DequeueJobs(o.ctx, &spoolv1.DequeueJobsRequest{Queue: "builds", MaxJobs: 1, WaitSeconds: 20, WorkerId: "w1"})
		done <- dequeued{resp, err}
	}()
	waitFor(t, "the worker to wait out the pause", func() bool { return o.s.pollers.waitingOutPause(0) == 1 })
	if q := queueNamed(t, o, "builds"); q.GetWorkers() != 1 || !q.GetPaused() {
		t.Fatalf("the paused queue lists %d workers, paused %v; want the waiting one, paused", q.GetWorkers(), q.GetPaused())
	}
	resumed := time.Now()
	if _, err := o.s.ResumeQueue(o.ctx, &spoolv1.ResumeQueueRequest{Name: "builds"}); err != nil {
		t.Fatal(err)
	}
	select {
	case d := <-done:
		if ls := d.resp.GetLeases(); d.err != nil || len(ls) != 1 || ls[0].GetJob().GetJobId() != j.GetJobId() {
			t.Fatalf("after the resume the waiting worker got %d leases (%v)", len(ls), d.err)
		}
	case <-time.After(5 * time.Second): // a quarter of the wait: only the resume's wake-up is this quick
		t.Fatalf("the waiting worker still has nothing %s after the resume", time.Since(resumed))
	}
}

func queueNamed(t *testing.T, o *operator, name string) *spoolv1.Queue {
	t.Helper()
	resp, err := o.s.ListQueues(o.ctx, &spoolv1.ListQueuesRequest{})
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range resp.GetQueues() {
		if q.GetName() == name {
			return q
		}
	}
	return nil
}

// waitFor polls cond (a state of another goroutine, which has no signal
// to wait on) until it holds.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for range 500 {
		if cond() {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("gave up waiting for %s", what)
}

// Rerun copies the command, queue and budgets, links both ways, repeats
// with a request id, and refuses what cannot run again.
func TestRerun(t *testing.T) {
	o := newOperator(t)
	o.enqueue(t, "ci")
	old := o.run(t, "ci", 0)
	resp, err := o.s.RerunJob(o.ctx, &spoolv1.RerunJobRequest{JobId: old.GetJobId(), RequestId: "again-1"})
	if err != nil {
		t.Fatal(err)
	}
	nj := resp.GetJob()
	if nj.GetRerunOf() != old.GetJobId() || nj.GetQueue() != "ci" || nj.GetRetries() != 2 || nj.GetParams().GetArgv()[1] != "test" ||
		nj.GetState() != spoolv1.JobState_JOB_STATE_QUEUED {
		t.Fatalf("the rerun: %v", nj)
	}
	again, err := o.s.RerunJob(o.ctx, &spoolv1.RerunJobRequest{JobId: old.GetJobId(), RequestId: "again-1"})
	if err != nil || again.GetJob().GetJobId() != nj.GetJobId() {
		t.Fatalf("a repeat with the same request id: %v, %v", again.GetJob(), err)
	}
	if got, _ := o.st.Get(o.ctx, old.GetJobId()); len(got.GetReruns()) != 1 || got.GetReruns()[0] != nj.GetJobId() {
		t.Fatalf("the old job's reruns: %v", got.GetReruns())
	}
	_, err = o.s.RerunJob(o.ctx, &spoolv1.RerunJobRequest{JobId: nj.GetJobId()})
	if !errors.Is(err, spool.ErrConflict) {
		t.Errorf("rerun of a queued job: %v, want ErrConflict", err)
	}
	_, err = o.s.RerunJob(o.ctx, &spoolv1.RerunJobRequest{JobId: "0195f3c2-0000-7000-8000-000000000000"})
	if !errors.Is(err, spool.ErrNotFound) {
		t.Errorf("rerun of a missing job: %v", err)
	}
	rejected, err := o.s.EnqueueJob(o.ctx, &spoolv1.EnqueueJobRequest{Queue: "ci", RejectReason: "not a job spec"})
	if err != nil {
		t.Fatal(err)
	}
	_, err = o.s.RerunJob(o.ctx, &spoolv1.RerunJobRequest{JobId: rejected.GetJob().GetJobId()})
	if !errors.Is(err, spool.ErrInvalidArgument) {
		t.Errorf("rerun of a rejected job: %v, want ErrInvalidArgument", err)
	}
}

// The workers seen polling are forgotten a minute after their last poll,
// also on a server nobody asks for its queues.
func TestPollersForgetOldPolls(t *testing.T) {
	var p pollers
	start := time.Now()
	for i := range 1000 {
		p.polled(fmt.Sprintf("q%d", i), "w", start)
	}
	p.polled("q0", "w", start.Add(30*time.Second))
	p.polled("late", "w", start.Add(2*time.Minute))
	if n := len(p.seen); n != 1 {
		t.Fatalf("%d queues remembered after a poll two minutes later, want only the late one", n)
	}
	if got := p.counts(context.Background(), start.Add(2*time.Minute)); len(got) != 1 || got["late"] != 1 {
		t.Fatalf("counts: %v", got)
	}
}

// On PostgreSQL the lease itself keeps the pause (store.PausedLeaser): a
// paused queue gives no job, a worker waits it out, and a resume through
// another server's core wakes it.
func TestPauseStopsLeasesOnPostgres(t *testing.T) {
	t.Parallel()
	url := pgtest.NewDatabase(t)
	cfg := config.Default()
	cfg.Auth.Disabled = true
	ctx := WithCredentials(context.Background(), Credentials{Host: "localhost"})
	key := make([]byte, 32)
	var cores [2]*Service
	for i := range cores {
		st, err := pgstore.Open(ctx, pgstore.Config{URL: url, MaxConns: 4, MinConns: 1}, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = st.Close() })
		cores[i] = newCore(t, st, cfg, key)
	}
	a, b := cores[0], cores[1]
	resp, err := a.EnqueueJob(ctx, &spoolv1.EnqueueJobRequest{Queue: "builds", Params: &spoolv1.JobParams{Argv: []string{"make"}}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.PauseQueue(ctx, &spoolv1.PauseQueueRequest{Name: "builds"}); err != nil {
		t.Fatal(err)
	}
	dequeue := func(wait int32) ([]*spoolv1.JobLease, error) {
		resp, err := a.DequeueJobs(ctx, &spoolv1.DequeueJobsRequest{Queue: "builds", MaxJobs: 1, WaitSeconds: wait, WorkerId: "w1"})
		return resp.GetLeases(), err
	}
	if ls, err := dequeue(0); err != nil || len(ls) != 0 {
		t.Fatalf("a paused queue gave %d jobs (%v)", len(ls), err)
	}
	type dequeued struct {
		leases []*spoolv1.JobLease
		err    error
	}
	done := make(chan dequeued, 1)
	go func() {
		ls, err := dequeue(20)
		done <- dequeued{ls, err}
	}()
	select {
	case d := <-done:
		t.Fatalf("a worker on the paused queue was answered at once: %d leases (%v)", len(d.leases), d.err)
	case <-time.After(300 * time.Millisecond): // longer than the store's poll interval
	}
	if _, err := b.ResumeQueue(ctx, &spoolv1.ResumeQueueRequest{Name: "builds"}); err != nil {
		t.Fatal(err)
	}
	select {
	case d := <-done:
		if d.err != nil || len(d.leases) != 1 || d.leases[0].GetJob().GetJobId() != resp.GetJob().GetJobId() {
			t.Fatalf("after the resume the waiting worker got %d leases (%v)", len(d.leases), d.err)
		}
	case <-time.After(5 * time.Second): // a quarter of the wait: only a wake-up is this quick
		t.Fatal("the waiting worker still has nothing after a resume on another server")
	}
}

// Pausing or resuming a queue that is none refuses with the queues there
// are, and pauses nothing: a typo must not leave the meant queue running
// while a queue of the typo's name waits paused for a job.
func TestPauseUnknownQueue(t *testing.T) {
	o := newOperator(t)
	for _, pause := range []bool{true, false} {
		var err error
		if pause {
			_, err = o.s.PauseQueue(o.ctx, &spoolv1.PauseQueueRequest{Name: "builds"})
		} else {
			_, err = o.s.ResumeQueue(o.ctx, &spoolv1.ResumeQueueRequest{Name: "builds"})
		}
		want := `no queue is named "builds": there are no queues yet; a queue appears with its first job (spool submit -q builds) or when a worker polls it (spool worker -q builds)`
		if !errors.Is(err, spool.ErrNotFound) || !strings.HasSuffix(err.Error(), want) {
			t.Fatalf("pause %v of a queue there is not: %v; want ErrNotFound saying %q", pause, err, want)
		}
	}
	o.enqueue(t, "deploys")
	o.enqueue(t, "builds-x")
	_, err := o.s.PauseQueue(o.ctx, &spoolv1.PauseQueueRequest{Name: "builds"})
	if want := `no queue is named "builds": the queues are builds-x, deploys; `; !errors.Is(err, spool.ErrNotFound) || !strings.Contains(err.Error(), want) {
		t.Fatalf("pause of a queue there is not: %v; want ErrNotFound naming the queues (%q)", err, want)
	}
	resp, err := o.s.ListQueues(o.ctx, &spoolv1.ListQueuesRequest{})
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range resp.GetQueues() {
		if q.GetPaused() || q.GetName() == "builds" {
			t.Fatalf("a refused pause left %v", q)
		}
	}
}

// A server records at most maxSharedPollers worker names in the store,
// however many a worker key makes up, and counts them all itself.
func TestSharedPollersBounded(t *testing.T) {
	var p pollers
	now := time.Now()
	for i := range 3 * maxSharedPollers {
		p.polled(fmt.Sprintf("q%d", i%3), fmt.Sprintf("made-up-%d", i), now)
	}
	n := 0
	for _, ws := range p.names() {
		n += len(ws)
	}
	if n != maxSharedPollers {
		t.Fatalf("%d names shared, want %d", n, maxSharedPollers)
	}
	total := int32(0)
	for _, c := range p.counts(context.Background(), now) {
		total += c
	}
	if total != 3*maxSharedPollers {
		t.Fatalf("this server counts %d workers, want all %d", total, 3*maxSharedPollers)
	}
}
