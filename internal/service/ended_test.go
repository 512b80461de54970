package service

import (
	"testing"
	"time"

	spoolv1 "github.com/spool-run/spool/gen/spool/v1"
)

// TestListQueuesEndedPerMinute: asked for, each queue with a job ended in
// the hour gets 60 minutes, oldest first, a minute apart, the last the one
// under way, holding its ended jobs by final state; a queue with none
// ended gets none, and a listing that does not ask gets none at all.
func TestListQueuesEndedPerMinute(t *testing.T) {
	o := newOperator(t)
	o.enqueue(t, "ci")
	o.run(t, "ci", 0)
	o.enqueue(t, "ci")
	o.run(t, "ci", 0)
	// Without retries, so that exit 1 fails it.
	if _, err := o.s.EnqueueJob(o.ctx, &spoolv1.EnqueueJobRequest{Queue: "ci", Params: &spoolv1.JobParams{Argv: []string{"false"}}}); err != nil {
		t.Fatal(err)
	}
	o.run(t, "ci", 1)
	cancelled := o.enqueue(t, "ci")
	if _, err := o.s.CancelJob(o.ctx, &spoolv1.CancelJobRequest{JobId: cancelled.GetJobId()}); err != nil {
		t.Fatal(err)
	}
	o.enqueue(t, "idle")

	before := time.Now().Truncate(time.Minute)
	resp, err := o.s.ListQueues(o.ctx, &spoolv1.ListQueuesRequest{EndedPerMinute: true})
	if err != nil {
		t.Fatal(err)
	}
	after := time.Now().Truncate(time.Minute)
	byName := map[string]*spoolv1.Queue{}
	for _, q := range resp.GetQueues() {
		byName[q.GetName()] = q
	}
	if n := len(byName["idle"].GetEndedPerMinute()); n != 0 {
		t.Errorf("a queue with nothing ended has %d minutes", n)
	}
	ms := byName["ci"].GetEndedPerMinute()
	if len(ms) != EndedMinutes {
		t.Fatalf("%d minutes, want %d", len(ms), EndedMinutes)
	}
	var succeeded, failed, cancelledN int64
	for i, m := range ms {
		if i > 0 && !m.GetMinute().AsTime().Equal(ms[i-1].GetMinute().AsTime().Add(time.Minute)) {
			t.Fatalf("minute %d is %v, after %v", i, m.GetMinute().AsTime(), ms[i-1].GetMinute().AsTime())
		}
		succeeded, failed, cancelledN = succeeded+m.GetSucceeded(), failed+m.GetFailed(), cancelledN+m.GetCancelled()
	}
	if last := ms[EndedMinutes-1].GetMinute().AsTime(); last.Before(before) || last.After(after) {
		t.Errorf("the last minute is %v, not the one under way (%v)", last, before)
	}
	if succeeded != 2 || failed != 1 || cancelledN != 1 {
		t.Errorf("the hour holds %d succeeded, %d failed, %d cancelled; want 2, 1, 1", succeeded, failed, cancelledN)
	}
	plain, err := o.s.ListQueues(o.ctx, &spoolv1.ListQueuesRequest{})
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range plain.GetQueues() {
		if len(q.GetEndedPerMinute()) != 0 {
			t.Errorf("a listing that did not ask has minutes for %s", q.GetName())
		}
	}
}
