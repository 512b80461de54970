package service

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/spool-run/spool"
	spoolv1 "github.com/spool-run/spool/gen/spool/v1"
	"github.com/spool-run/spool/internal/apierr"
	"github.com/spool-run/spool/internal/store"
	"github.com/spool-run/spool/internal/store/storekit"
)

// RecentWindow is how far back a queue's succeeded, failed and cancelled
// jobs count.
const RecentWindow = 24 * time.Hour

// ListQueues returns every queue the caller may see, by name: what waits
// and runs in it, what ended in the last RecentWindow, whether it is
// paused and how many workers poll it.
func (s *Service) ListQueues(ctx context.Context, m *spoolv1.ListQueuesRequest) (*spoolv1.ListQueuesResponse, error) {
	caller, err := s.authorize(ctx, PermRead, "")
	if err != nil {
		return nil, err
	}
	queues, err := s.queuesOf(ctx, caller, m.GetEndedPerMinute())
	if err != nil {
		return nil, err
	}
	return &spoolv1.ListQueuesResponse{WindowSeconds: int32(RecentWindow / time.Second), Queues: queues}, nil
}

// queuesOf returns the queues caller may see, by name, with their counts
// (and the ended jobs by the minute, when perMinute is set).
func (s *Service) queuesOf(ctx context.Context, caller Caller, perMinute bool) ([]*spoolv1.Queue, error) {
	now := storekit.Now()
	stats, err := s.store.QueueStats(ctx, now.Add(-RecentWindow))
	if err != nil {
		return nil, s.fail(ctx, "ListQueues", err)
	}
	workers := s.pollers.counts(ctx, now)
	byName := map[string]*spoolv1.Queue{}
	for _, st := range stats {
		byName[st.Name] = queueMessage(st)
	}
	if perMinute {
		if err := s.addEndedPerMinute(ctx, now, byName); err != nil {
			return nil, err
		}
	}
	// A queue workers wait on before any job names it is a queue too.
	for name := range workers {
		if byName[name] == nil {
			byName[name] = &spoolv1.Queue{Name: name}
		}
	}
	var out []*spoolv1.Queue
	for _, name := range slices.Sorted(maps.Keys(byName)) {
		if !caller.mayUse(name) {
			continue
		}
		q := byName[name]
		q.Workers = workers[name]
		out = append(out, q)
	}
	return out, nil
}

// queueMessage is a store's counts as the API shows them.
func queueMessage(st store.QueueStats) *spoolv1.Queue {
	q := &spoolv1.Queue{Name: st.Name, Paused: st.Paused, Scheduled: st.Scheduled, Queued: st.Queued, Running: st.Running, MaxRunning: st.MaxRunning,
		Succeeded: st.Succeeded, Failed: st.Failed, Cancelled: st.Cancelled}
	if st.Paused {
		q.PausedAt = timestamppb.New(st.PausedAt)
	}
	if !st.OldestQueued.IsZero() {
		q.OldestQueuedAt = timestamppb.New(st.OldestQueued)
	}
	return q
}

// PauseQueue stops workers from taking a queue's jobs: from the moment it
// returns, no lease of the queue reaches a worker (a lease the store was
// granting meanwhile is handed back at once). Running jobs go on.
func (s *Service) PauseQueue(ctx context.Context, m *spoolv1.PauseQueueRequest) (*spoolv1.PauseQueueResponse, error) {
	q, err := s.setPaused(ctx, "PauseQueue", m.GetName(), true)
	if err != nil {
		return nil, err
	}
	return &spoolv1.PauseQueueResponse{Queue: q}, nil
}

// ResumeQueue lets workers take a paused queue's jobs again.
func (s *Service) ResumeQueue(ctx context.Context, m *spoolv1.ResumeQueueRequest) (*spoolv1.ResumeQueueResponse, error) {
	q, err := s.setPaused(ctx, "ResumeQueue", m.GetName(), false)
	if err != nil {
		return nil, err
	}
	s.pollers.wakeResumed()
	return &spoolv1.ResumeQueueResponse{Queue: q}, nil
}

// setPaused pauses or resumes a queue and returns it as it is now.
func (s *Service) setPaused(ctx context.Context, op, name string, paused bool) (*spoolv1.Queue, error) {
	caller, err := s.authorize(ctx, PermOperate, name)
	if err != nil {
		return nil, err
	}
	if name == "" {
		return nil, invalid("name is required: the queue to pause or resume")
	}
	queue, err := checkQueue(name)
	if err != nil {
		return nil, err
	}
	// A name that is no queue is a typo far more often than a queue to
	// come: pausing it would succeed and leave the meant queue running.
	known, err := s.queuesOf(ctx, caller, false)
	if err != nil {
		return nil, err
	}
	if !slices.ContainsFunc(known, func(q *spoolv1.Queue) bool { return q.GetName() == queue }) {
		return nil, noSuchQueue(queue, known)
	}
	if err := s.store.SetQueuePaused(ctx, queue, paused, storekit.Now()); err != nil {
		return nil, s.fail(ctx, op, err)
	}
	what := "queue resumed"
	if paused {
		what = "queue paused"
	}
	s.audit(ctx, caller, what, "queue", queue)
	return s.queueNow(ctx, caller, queue)
}

// queueNow returns queue as it is now, after a change to it.
func (s *Service) queueNow(ctx context.Context, caller Caller, queue string) (*spoolv1.Queue, error) {
	now, err := s.queuesOf(ctx, caller, false)
	if err != nil {
		return nil, err
	}
	for _, q := range now {
		if q.GetName() == queue {
			return q, nil
		}
	}
	return &spoolv1.Queue{Name: queue}, nil
}

// listedQueues is how many queue names an error lists before it says how
// many more there are.
const listedQueues = 20

// noSuchQueue refuses name, which none of known is, naming them.
func noSuchQueue(name string, known []*spoolv1.Queue) error {
	how := fmt.Sprintf("a queue appears with its first job (spool submit -q %s) or when a worker polls it (spool worker -q %s)", name, name)
	if len(known) == 0 {
		return apierr.Errorf(spool.ErrNotFound, "no queue is named %q: there are no queues yet; %s", name, how)
	}
	var names []string
	for i, q := range known {
		if i == listedQueues {
			names = append(names, fmt.Sprintf("%d more", len(known)-listedQueues))
			break
		}
		names = append(names, q.GetName())
	}
	return apierr.Errorf(spool.ErrNotFound, "no queue is named %q: the queues are %s; %s", name, strings.Join(names, ", "), how)
}

// waitUnpaused waits while queue is paused, up to wait, and reports
// whether the queue may be leased from now. A resume on this server ends
// the wait at once; one on another server is seen at the next poll.
func (s *Service) waitUnpaused(ctx context.Context, queue string, wait time.Duration) (bool, error) {
	resumed := s.pollers.resumeSignal()
	paused, err := s.store.QueuePaused(ctx, queue)
	if err != nil || !paused {
		return err == nil, err
	}
	s.pollers.waitingOutPause(1)
	defer s.pollers.waitingOutPause(-1)
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case <-resumed:
		paused, err = s.store.QueuePaused(ctx, queue)
		return err == nil && !paused, err
	case <-t.C:
	case <-ctx.Done():
	}
	return false, nil
}

// handBackPaused hands back leases granted while their queue was being
// paused, so a pause, once acknowledged, lets no new job start. It
// returns the leases to keep.
func (s *Service) handBackPaused(ctx context.Context, queue string, leases []store.Lease) ([]store.Lease, error) {
	if len(leases) == 0 {
		return leases, nil
	}
	paused, err := s.store.QueuePaused(ctx, queue)
	if err != nil || !paused {
		return leases, err
	}
	for _, l := range leases {
		if _, err := s.store.Release(context.WithoutCancel(ctx), l.LeaseRef, false, "its queue was paused as it was leased"); err != nil {
			s.log.WarnContext(ctx, "could not hand back a job of a paused queue; it runs when its lease ends", "job_id", l.JobID, "error", err)
		}
	}
	return nil, nil
}

// ConfigureQueue sets a queue's limits for every server sharing the store
// and returns the queue as it is now. Whoever may pause a queue may
// configure it; a queue no job names yet may be configured, so that its
// limit holds from its first job.
func (s *Service) ConfigureQueue(ctx context.Context, m *spoolv1.ConfigureQueueRequest) (*spoolv1.ConfigureQueueResponse, error) {
	caller, err := s.authorize(ctx, PermOperate, m.GetName())
	if err != nil {
		return nil, err
	}
	if m.GetName() == "" {
		return nil, invalid("name is required: the queue to configure")
	}
	queue, err := checkQueue(m.GetName())
	if err != nil {
		return nil, err
	}
	if m.MaxRunning != nil {
		n := m.GetMaxRunning()
		if n < 0 || n > store.MaxQueueRunning {
			return nil, invalid("max_running must be 0 (no limit) to %d, got %d", store.MaxQueueRunning, n)
		}
		if err := s.store.SetQueueMaxRunning(ctx, queue, n); err != nil {
			return nil, s.fail(ctx, "ConfigureQueue", err)
		}
		s.audit(ctx, caller, "queue configured", "queue", queue, "max_running", n)
	}
	q, err := s.queueNow(ctx, caller, queue)
	if err != nil {
		return nil, err
	}
	return &spoolv1.ConfigureQueueResponse{Queue: q}, nil
}
