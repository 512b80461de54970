package service

import (
	"errors"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/spool-run/spool"
	spoolv1 "github.com/spool-run/spool/gen/spool/v1"
	"github.com/spool-run/spool/internal/config"
	"github.com/spool-run/spool/internal/store/backends/memstore"
)

func argv(a ...string) *spoolv1.JobParams { return &spoolv1.JobParams{Argv: a} }

// wantInvalid fails unless err is an invalid argument saying want.
func wantInvalid(t *testing.T, what string, err error, want string) {
	t.Helper()
	if !errors.Is(err, spool.ErrInvalidArgument) || !strings.Contains(err.Error(), want) {
		t.Errorf("%s: %v; want an invalid argument saying %q", what, err, want)
	}
}

// A job's time: run_in and run_at make it SCHEDULED, a time past queues
// it at once, and what cannot be meant is refused.
func TestEnqueueWhen(t *testing.T) {
	o := newOperator(t)
	enq := func(m *spoolv1.EnqueueJobRequest) (*spoolv1.Job, error) {
		m.Params = argv("true")
		resp, err := o.s.EnqueueJob(o.ctx, m)
		return resp.GetJob(), err
	}
	before := time.Now()
	j, err := enq(&spoolv1.EnqueueJobRequest{RunIn: durationpb.New(time.Hour)})
	if err != nil || j.GetState() != spoolv1.JobState_JOB_STATE_SCHEDULED {
		t.Fatalf("run_in 1h: %v, %v; want SCHEDULED", j.GetState(), err)
	}
	if ra := j.GetRunAfter().AsTime(); ra.Before(before.Add(time.Hour)) || ra.After(time.Now().Add(time.Hour)) {
		t.Errorf("run_in 1h: run_after %v, want an hour after the request", ra)
	}
	at := time.Now().Add(48 * time.Hour).Truncate(time.Second)
	if j, err = enq(&spoolv1.EnqueueJobRequest{RunAt: timestamppb.New(at)}); err != nil || !j.GetRunAfter().AsTime().Equal(at) {
		t.Errorf("run_at: %v, %v; want run_after %v", j.GetRunAfter(), err, at)
	}
	if j, err = enq(&spoolv1.EnqueueJobRequest{RunAt: timestamppb.New(time.Now().Add(-time.Hour))}); err != nil || j.GetState() != spoolv1.JobState_JOB_STATE_QUEUED {
		t.Errorf("run_at an hour ago: %v, %v; want QUEUED", j.GetState(), err)
	}
	_, err = enq(&spoolv1.EnqueueJobRequest{RunAt: timestamppb.Now(), RunIn: durationpb.New(time.Minute)})
	wantInvalid(t, "run_at and run_in", err, "give one of them")
	_, err = enq(&spoolv1.EnqueueJobRequest{RunIn: durationpb.New(400 * 24 * time.Hour)})
	wantInvalid(t, "400 days ahead", err, "more than a year ahead")
	_, err = enq(&spoolv1.EnqueueJobRequest{RunIn: durationpb.New(-time.Second)})
	wantInvalid(t, "negative run_in", err, "run_in must be a positive duration")
	_, err = enq(&spoolv1.EnqueueJobRequest{RunAt: &timestamppb.Timestamp{Seconds: 1, Nanos: -5}})
	wantInvalid(t, "malformed run_at", err, "run_at is not a valid time")
}

// Priorities 1 to 4 are kept, 0 is the default, others are refused; a
// rerun keeps the priority and the webhooks, not the time.
func TestEnqueuePriorityAndRerun(t *testing.T) {
	o := newOperator(t)
	for p, want := range map[int32]int32{0: 2, 1: 1, 4: 4} {
		resp, err := o.s.EnqueueJob(o.ctx, &spoolv1.EnqueueJobRequest{Params: argv("true"), Priority: p})
		if err != nil || resp.GetJob().GetPriority() != want {
			t.Errorf("priority %d: %d, %v; want %d", p, resp.GetJob().GetPriority(), err, want)
		}
	}
	for _, p := range []int32{-1, 5} {
		_, err := o.s.EnqueueJob(o.ctx, &spoolv1.EnqueueJobRequest{Params: argv("true"), Priority: p})
		wantInvalid(t, "priority", err, "priority must be 1 (first) to 4 (last)")
	}
	resp, err := o.s.EnqueueJob(o.ctx, &spoolv1.EnqueueJobRequest{Queue: "ci", Params: argv("true"), Priority: 1,
		Notify: []string{"https://hooks.example.com/a"}, RunAt: timestamppb.New(time.Now().Add(-time.Second))})
	if err != nil {
		t.Fatal(err)
	}
	first := o.run(t, "ci", 0)
	if first.GetJobId() != resp.GetJob().GetJobId() {
		t.Fatalf("ran %s, want %s", first.GetJobId(), resp.GetJob().GetJobId())
	}
	again, err := o.s.RerunJob(o.ctx, &spoolv1.RerunJobRequest{JobId: first.GetJobId()})
	if err != nil {
		t.Fatal(err)
	}
	if j := again.GetJob(); j.GetPriority() != 1 || len(j.GetNotify()) != 1 || j.GetState() != spoolv1.JobState_JOB_STATE_QUEUED {
		t.Errorf("rerun: priority %d, notify %v, %v; want 1, the first's URL, QUEUED", j.GetPriority(), j.GetNotify(), j.GetState())
	}
}

// after names jobs that must exist and that the caller may read; the new
// job waits SCHEDULED and is listed on its parents.
func TestEnqueueAfter(t *testing.T) {
	b := newBatchCore(t)
	admin := b.key(t, "admin", spoolv1.KeyRole_KEY_ROLE_ADMIN)
	limited := b.key(t, "builds-only", spoolv1.KeyRole_KEY_ROLE_SUBMIT, "builds")
	parent := func(queue string) string {
		resp, err := b.s.EnqueueJob(admin, &spoolv1.EnqueueJobRequest{Queue: queue, Params: argv("true")})
		if err != nil {
			t.Fatal(err)
		}
		return resp.GetJob().GetJobId()
	}
	p1, p2, other := parent("builds"), parent("builds"), parent("deploys")
	resp, err := b.s.EnqueueJob(limited, &spoolv1.EnqueueJobRequest{Queue: "builds", Params: argv("true"), After: []string{p1, p2, p1}})
	if err != nil {
		t.Fatal(err)
	}
	child := resp.GetJob()
	if child.GetState() != spoolv1.JobState_JOB_STATE_SCHEDULED || len(child.GetAfter()) != 2 {
		t.Errorf("child: %v after %v; want SCHEDULED after the two parents, once each", child.GetState(), child.GetAfter())
	}
	if got, _ := b.st.Get(admin, p1); len(got.GetFollowers()) != 1 || got.GetFollowers()[0] != child.GetJobId() {
		t.Errorf("parent's followers: %v, want [%s]", got.GetFollowers(), child.GetJobId())
	}
	_, err = b.s.EnqueueJob(limited, &spoolv1.EnqueueJobRequest{Queue: "builds", Params: argv("true"), After: []string{other}})
	wantInvalid(t, "after a job of a queue the key may not read", err, "does not exist")
	_, err = b.s.EnqueueJob(admin, &spoolv1.EnqueueJobRequest{Params: argv("true"), After: []string{"no-such-job"}})
	wantInvalid(t, "after a job that is not there", err, "does not exist")
	many := make([]string, 101)
	for i := range many {
		many[i] = p1
	}
	_, err = b.s.EnqueueJob(admin, &spoolv1.EnqueueJobRequest{Params: argv("true"), After: many})
	wantInvalid(t, "101 after", err, "at most 100")
}

// notify takes up to 5 http(s) URLs, adds the queue's own, and refuses
// what it cannot POST to.
func TestEnqueueNotify(t *testing.T) {
	cfg := config.Default()
	cfg.Auth.Disabled = true
	cfg.Queues = map[string]config.Queue{"deploys": {Notify: []string{"https://ops.example.com/hook", "https://b.example.com/x"}}}
	o := &operator{st: memstore.New(), ctx: newOperator(t).ctx}
	o.s = newCore(t, o.st, cfg, make([]byte, 32))
	enq := func(queue string, urls ...string) (*spoolv1.Job, error) {
		resp, err := o.s.EnqueueJob(o.ctx, &spoolv1.EnqueueJobRequest{Queue: queue, Params: argv("true"), Notify: urls})
		return resp.GetJob(), err
	}
	j, err := enq("deploys", "http://ci.example.com/done", "https://ops.example.com/hook")
	if err != nil || strings.Join(j.GetNotify(), " ") != "https://ops.example.com/hook https://b.example.com/x http://ci.example.com/done" {
		t.Errorf("notify: %v, %v; want the queue's two and the job's own, each once", j.GetNotify(), err)
	}
	for _, c := range []struct{ url, want string }{
		{"ftp://example.com/x", "only http:// and https://"},
		{"https://user:pw@example.com/", "carries credentials"},
		{"https:///path", "has no host"},
		{"http://example.com/a b", "spaces"},
	} {
		_, err := enq("ci", c.url)
		wantInvalid(t, c.url, err, c.want)
	}
	six := []string{"http://a.example/", "http://b.example/", "http://c.example/", "http://d.example/", "http://e.example/", "http://f.example/"}
	_, err = enq("ci", six...)
	wantInvalid(t, "six URLs", err, "at most 5")
	_, err = enq("deploys", six[:4]...)
	wantInvalid(t, "four URLs on a queue with two", err, "may add at most 3")
}

// ConfigureQueue sets max_running for whoever may pause queues, bounds
// it, and ListQueues shows it with the scheduled jobs.
func TestConfigureQueue(t *testing.T) {
	b := newBatchCore(t)
	admin := b.key(t, "admin", spoolv1.KeyRole_KEY_ROLE_ADMIN)
	submit := b.key(t, "submitter", spoolv1.KeyRole_KEY_ROLE_SUBMIT)
	five := int32(5)
	resp, err := b.s.ConfigureQueue(admin, &spoolv1.ConfigureQueueRequest{Name: "gpu", MaxRunning: &five})
	if err != nil || resp.GetQueue().GetMaxRunning() != 5 {
		t.Fatalf("configure a queue no job names: %v, %v", resp.GetQueue(), err)
	}
	if _, err := b.s.EnqueueJob(admin, &spoolv1.EnqueueJobRequest{Queue: "gpu", Params: argv("true"), RunIn: durationpb.New(time.Hour)}); err != nil {
		t.Fatal(err)
	}
	list, err := b.s.ListQueues(admin, &spoolv1.ListQueuesRequest{})
	if err != nil || len(list.GetQueues()) != 1 || list.GetQueues()[0].GetMaxRunning() != 5 || list.GetQueues()[0].GetScheduled() != 1 {
		t.Errorf("ListQueues: %v, %v; want gpu with max_running 5 and 1 scheduled", list.GetQueues(), err)
	}
	_, err = b.s.ConfigureQueue(submit, &spoolv1.ConfigureQueueRequest{Name: "gpu", MaxRunning: &five})
	if !errors.Is(err, spool.ErrPermissionDenied) {
		t.Errorf("a submit key configures: %v, want permission denied", err)
	}
	tooMany := int32(10001)
	_, err = b.s.ConfigureQueue(admin, &spoolv1.ConfigureQueueRequest{Name: "gpu", MaxRunning: &tooMany})
	wantInvalid(t, "max_running 10001", err, "max_running must be 0 (no limit) to 10000")
	_, err = b.s.ConfigureQueue(admin, &spoolv1.ConfigureQueueRequest{Name: "no such/queue", MaxRunning: &five})
	wantInvalid(t, "a bad name", err, "queue")
}
