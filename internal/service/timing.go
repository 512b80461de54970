package service

import (
	"context"
	"errors"
	"slices"
	"sync"
	"time"

	"github.com/spool-run/spool"
	spoolv1 "github.com/spool-run/spool/gen/spool/v1"
	"github.com/spool-run/spool/internal/convert"
	"github.com/spool-run/spool/internal/store"
	"github.com/spool-run/spool/internal/store/storekit"
	"github.com/spool-run/spool/internal/webhook"
)

// maxRunAhead is how far ahead a job may be submitted for: further is far
// more often a mistake (a year typed for a month) than a plan, and a job
// waiting that long outlives most retention settings.
const maxRunAhead = 365 * 24 * time.Hour

// timing is what a request says of when its job runs, checked: its
// run_after (zero: as soon as it may), priority and the jobs it runs
// after.
type timing struct {
	runAfter time.Time
	priority int32
	after    []string
}

// checkTiming checks run_at, run_in, priority and after of a request by
// caller, at now. Each job in after must exist and be one the caller may
// read: a job may not wait on, and so learn the end of, a job its
// submitter cannot see.
func (s *Service) checkTiming(ctx context.Context, caller Caller, m *spoolv1.EnqueueJobRequest, now time.Time) (timing, error) {
	var t timing
	at, in := m.GetRunAt(), m.GetRunIn()
	switch {
	case at != nil && in != nil:
		return t, invalid("run_at and run_in: give one of them (a time, or a delay from now)")
	case at != nil:
		if at.CheckValid() != nil {
			return t, invalid("run_at is not a valid time")
		}
		t.runAfter = at.AsTime()
	case in != nil:
		if in.CheckValid() != nil || in.AsDuration() < 0 {
			return t, invalid("run_in must be a positive duration, got %v", in.AsDuration())
		}
		t.runAfter = now.Add(in.AsDuration())
	}
	if t.runAfter.After(now.Add(maxRunAhead)) {
		return t, invalid("the job is to run at %s, more than a year ahead; submit it closer to its time (or schedule it)", t.runAfter.UTC().Format(time.RFC3339))
	}
	if !t.runAfter.After(now) {
		// A time past means now: the job is queued at once.
		t.runAfter = time.Time{}
	}
	t.priority = m.GetPriority()
	if t.priority < 0 || t.priority > store.LowestPriority {
		return t, invalid("priority must be %d (first) to %d (last), or 0 for the default (%d); got %d",
			store.HighestPriority, store.LowestPriority, store.DefaultPriority, t.priority)
	}
	after := m.GetAfter()
	if len(after) > store.MaxAfter {
		return t, invalid("after: %d jobs; a job runs after at most %d", len(after), store.MaxAfter)
	}
	for i, id := range after {
		if err := checkJobID(id); err != nil {
			return t, invalid("after[%d]: %v", i, err)
		}
		if slices.Contains(t.after, id) {
			continue
		}
		j, err := s.store.Get(ctx, id)
		if errors.Is(err, spool.ErrNotFound) || err == nil && !caller.mayUse(j.GetQueue()) {
			return t, store.AfterNotFound(id)
		}
		if err != nil {
			return t, s.fail(ctx, "EnqueueJob", err)
		}
		t.after = append(t.after, id)
	}
	return t, nil
}

// notifyURLs are the URLs told of the end of a job of queue whose request
// named urls: the queue's own first, each once.
func (s *Service) notifyURLs(queue string, urls []string) ([]string, error) {
	if len(urls) > store.MaxNotify {
		return nil, invalid("notify: %d URLs; at most %d", len(urls), store.MaxNotify)
	}
	for i, u := range urls {
		if err := webhook.CheckURL(u); err != nil {
			return nil, invalid("notify[%d]: %v", i, err)
		}
	}
	own := s.cfg.Queues[queue].Notify
	out := slices.Clone(own)
	for _, u := range urls {
		if !slices.Contains(out, u) {
			out = append(out, u)
		}
	}
	if len(out) > store.MaxNotify {
		return nil, invalid("notify: queue %s already notifies %d URLs (queues.%s.notify), so a job of it may add at most %d; got %d",
			queue, len(own), queue, store.MaxNotify-len(own), len(urls))
	}
	return out, nil
}

// alarm wakes the promoter (maintenance.Promoter) before its time: when
// this server made a job that is due sooner than the promoter's next
// round, or ended a job that others run after. Other servers' changes are
// seen at the promoter's next round, at most a second later.
type alarm struct {
	mu   sync.Mutex
	next time.Time // when the promoter wakes anyway (zero: not running)
	ring chan struct{}
}

func newAlarm() *alarm { return &alarm{ring: make(chan struct{}, 1)} }

// Sleeping tells the alarm when the promoter next wakes by itself.
func (a *alarm) Sleeping(until time.Time) {
	a.mu.Lock()
	a.next = until
	a.mu.Unlock()
}

// C is the channel the promoter waits on besides its timer.
func (a *alarm) C() <-chan struct{} { return a.ring }

// due rings the alarm when something is due at t, sooner than the
// promoter would look by itself.
func (a *alarm) due(t time.Time) {
	a.mu.Lock()
	// A wake time past means the promoter is in a round, which may have
	// read the store before this job was there.
	sooner := a.next.IsZero() || t.Before(a.next) || !a.next.After(time.Now())
	if sooner {
		a.next = t
	}
	a.mu.Unlock()
	if sooner {
		a.now()
	}
}

// now rings the alarm at once.
func (a *alarm) now() {
	select {
	case a.ring <- struct{}{}:
	default:
	}
}

// Promotions is the alarm the promoter sleeps on (maintenance.Promoter).
func (s *Service) Promotions() interface {
	Sleeping(until time.Time)
	C() <-chan struct{}
} {
	return s.alarm
}

// scheduledMade tells the promoter of a job just created SCHEDULED.
func (s *Service) scheduledMade(j *spoolv1.Job) {
	if !storekit.Scheduled(j) {
		return
	}
	if len(j.GetAfter()) > 0 {
		// The jobs it runs after may all have succeeded already.
		s.alarm.now()
		return
	}
	if ra := j.GetRunAfter(); ra != nil {
		s.alarm.due(ra.AsTime())
	}
}

// ended tells the promoter of a job that became final here: the jobs
// that run after it can move now.
func (s *Service) endedWithFollowers(j *spoolv1.Job) {
	if j != nil && len(j.GetFollowers()) > 0 && convert.State(j.GetState()).IsFinal() {
		s.alarm.now()
	}
}
