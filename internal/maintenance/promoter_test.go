package maintenance_test

import (
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	spoolv1 "github.com/spool-run/spool/gen/spool/v1"
	"github.com/spool-run/spool/internal/maintenance"
	"github.com/spool-run/spool/internal/store"
)

// The promoter sleeps long when nothing is due, and the core's alarm
// wakes it: when a job others run after ends here, and when a job due
// sooner than its next round is made here.
func TestPromoterWokenByAlarm(t *testing.T) {
	c := newCore(t)
	p := maintenance.NewPromoter(maintenance.PromoterOptions{Store: c.st, Alarm: c.svc.Promotions()})
	// Only the alarm can wake it within the test.
	p.SetInterval(time.Hour)
	if err := p.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	defer p.Stop()

	parent := c.enqueue(t, "ci")
	resp, err := c.svc.EnqueueJob(c.ctx, &spoolv1.EnqueueJobRequest{Queue: "ci", Params: &spoolv1.JobParams{Argv: []string{"deploy"}}, After: []string{parent.GetJobId()}})
	if err != nil {
		t.Fatal(err)
	}
	child := resp.GetJob()
	c.run(t, "ci", 0)
	waitState(t, c, child.GetJobId(), spoolv1.JobState_JOB_STATE_QUEUED)

	due := time.Now().Add(300 * time.Millisecond)
	resp, err = c.svc.EnqueueJob(c.ctx, &spoolv1.EnqueueJobRequest{Queue: "later", Params: &spoolv1.JobParams{Argv: []string{"x"}}, RunAt: timestamppb.New(due)})
	if err != nil {
		t.Fatal(err)
	}
	waitState(t, c, resp.GetJob().GetJobId(), spoolv1.JobState_JOB_STATE_QUEUED)
	if j, _ := c.st.Get(c.ctx, resp.GetJob().GetJobId()); j.GetUpdatedAt().AsTime().Before(due.Truncate(time.Microsecond)) {
		t.Errorf("queued at %v, before its time %v", j.GetUpdatedAt().AsTime(), due)
	}
}

// 10,000 jobs submitted for the same second are all queued, none before
// it.
func TestPromoterQueuesManyDueAtOnce(t *testing.T) {
	const total = 10000
	c := newCore(t)
	due := time.Now().Add(3 * time.Second).Truncate(time.Second)
	reqs := make([]*spoolv1.EnqueueJobRequest, 1000)
	for range total / len(reqs) {
		for i := range reqs {
			reqs[i] = &spoolv1.EnqueueJobRequest{Queue: "burst", Params: &spoolv1.JobParams{Argv: []string{"x"}}, RunAt: timestamppb.New(due)}
		}
		if _, err := c.svc.EnqueueJobs(c.ctx, &spoolv1.EnqueueJobsRequest{Jobs: reqs}); err != nil {
			t.Fatal(err)
		}
	}
	p := maintenance.NewPromoter(maintenance.PromoterOptions{Store: c.st, Alarm: c.svc.Promotions()})
	if err := p.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	defer p.Stop()
	for {
		stats, err := c.st.QueueStats(c.ctx, time.Now())
		if err != nil {
			t.Fatal(err)
		}
		n := queued(stats, "burst")
		if early := time.Now(); n > 0 && early.Before(due) {
			t.Fatalf("%d jobs queued at %v, before their time (%v)", n, early, due)
		}
		if n == total {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	// How late is a figure for the bench harness (go run ./bench -goals
	// -goal delayed), which measures it on a quiet machine against the
	// real stores, not a test's to hold on a shared one.
	t.Logf("%d jobs due at once: all queued %v after their time", total, time.Since(due))
}

func queued(stats []store.QueueStats, name string) int64 {
	for _, s := range stats {
		if s.Name == name {
			return s.Queued
		}
	}
	return 0
}
