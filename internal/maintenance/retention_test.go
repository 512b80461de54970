package maintenance_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/spool-run/spool"
	spoolv1 "github.com/spool-run/spool/gen/spool/v1"
	"github.com/spool-run/spool/internal/maintenance"
	"github.com/spool-run/spool/internal/store/storekit"
)

// retention is a retention sweeper of c's jobs whose clock the test moves.
func retention(c *core, keep time.Duration, shift *atomic.Int64) *maintenance.Retention {
	return maintenance.NewRetention(maintenance.RetentionOptions{Store: c.st, Jobs: c.svc, Retention: keep,
		Reclaimer: c.st.Capabilities().SpaceReclaimer,
		Clock:     func() time.Time { return storekit.Now().Add(time.Duration(shift.Load())) }})
}

// The retention sweeper deletes the jobs that ended longer ago than
// jobs.retention_days, and nothing else.
func TestRetentionSweep(t *testing.T) {
	c := newCore(t)
	var shift atomic.Int64
	r := retention(c, 24*time.Hour, &shift)
	for range 3 {
		c.enqueue(t, "ci")
	}
	ok := c.run(t, "ci", 0)
	bad := c.run(t, "ci", 1) // retried: queued again
	cancelled, err := c.svc.CancelJob(c.ctx, &spoolv1.CancelJobRequest{JobId: bad.GetJobId()})
	if err != nil {
		t.Fatal(err)
	}
	if n, err := r.Sweep(c.ctx); err != nil || n != 0 {
		t.Fatalf("a sweep the day the jobs ended deleted %d, %v", n, err)
	}
	shift.Store(int64(25 * time.Hour))
	if n, err := r.Sweep(c.ctx); err != nil || n != 2 {
		t.Fatalf("a sweep a day later deleted %d jobs, %v; want the 2 that ended", n, err)
	}
	for _, id := range []string{ok.GetJobId(), cancelled.GetJob().GetJobId()} {
		if _, err := c.st.Get(c.ctx, id); !errors.Is(err, spool.ErrNotFound) {
			t.Errorf("job %s after the sweep: %v", id, err)
		}
	}
	queues, err := c.svc.ListQueues(c.ctx, &spoolv1.ListQueuesRequest{})
	if err != nil || len(queues.GetQueues()) != 1 || queues.GetQueues()[0].GetQueued() != 1 {
		t.Errorf("the queued job went too: %v %v", queues.GetQueues(), err)
	}

	keep := newCore(t)
	var later atomic.Int64
	forever := retention(keep, 0, &later)
	keep.enqueue(t, "ci")
	keep.run(t, "ci", 0)
	later.Store(int64(1000 * 24 * time.Hour))
	if n, err := forever.Sweep(keep.ctx); err != nil || n != 0 {
		t.Errorf("retention 0 deleted %d, %v", n, err)
	}
}

// uploadsSeen records the sweeps of uploads asked for.
type uploadsSeen struct{ before []time.Time }

func (u *uploadsSeen) SweepUploads(_ context.Context, before time.Time) (int, error) {
	u.before = append(u.before, before)
	return 1, nil
}

// The retention chore deletes uploads older than their age, whatever the
// retention of jobs (for ever included).
func TestRetentionSweepsUploads(t *testing.T) {
	c := newCore(t)
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	seen := &uploadsSeen{}
	r := maintenance.NewRetention(maintenance.RetentionOptions{Store: c.st, Jobs: c.svc, Uploads: seen, UploadAge: 24 * time.Hour,
		Clock: func() time.Time { return now }})
	if n, err := r.SweepUploads(c.ctx); err != nil || n != 1 {
		t.Fatalf("sweep: %d, %v", n, err)
	}
	if len(seen.before) != 1 || !seen.before[0].Equal(now.Add(-24*time.Hour)) {
		t.Fatalf("uploads swept before %v; want a day before now", seen.before)
	}
}
