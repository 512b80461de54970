package maintenance

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	spoolv1 "github.com/spool-run/spool/gen/spool/v1"
	"github.com/spool-run/spool/internal/store"
)

// JobLister is the store as the idle sweeper reads it.
type JobLister interface {
	List(ctx context.Context, f store.ListFilter) ([]*spoolv1.Job, string, error)
}

// ExternalEnder ends an external job by the core's rule
// (service.EndExternal), noting why.
type ExternalEnder interface {
	EndExternal(ctx context.Context, job *spoolv1.Job, note string) (*spoolv1.Job, error)
}

// IdleOptions are what an IdleSources is built from.
type IdleOptions struct {
	Store JobLister
	Jobs  ExternalEnder
	// Queue is the queue of external jobs (ingest.queue).
	Queue string
	// Idle is how long a source may send nothing before its job ends
	// (ingest.idle_timeout_seconds; 0: never, and the sweeper does
	// nothing).
	Idle time.Duration
	Log  *slog.Logger
}

// IdleSources ends the external jobs whose source has sent nothing for
// the idle timeout. Every server may run it: ending a job that another
// server ended changes nothing.
type IdleSources struct {
	sweeper
	o IdleOptions
}

// NewIdleSources returns the idle sweeper o describes.
func NewIdleSources(o IdleOptions) *IdleSources {
	o.Log = orDiscard(o.Log)
	s := &IdleSources{o: o}
	// Sweeping a few times per timeout keeps the end within about a
	// quarter of it after the source's last event.
	var every time.Duration
	if o.Idle > 0 {
		every = min(max(o.Idle/4, time.Second), 30*time.Second)
	}
	s.sweeper = sweeper{what: "ended idle external jobs", interval: every, log: o.Log, round: s.Sweep}
	return s
}

// Sweep ends the running external jobs of the queue that have taken no
// event for the idle timeout, and says how many it ended.
func (s *IdleSources) Sweep(ctx context.Context) (int, error) {
	f := store.ListFilter{Queue: s.o.Queue, States: []spoolv1.JobState{spoolv1.JobState_JOB_STATE_RUNNING}, Limit: store.MaxListLimit}
	ended := 0
	for {
		jobs, next, err := s.o.Store.List(ctx, f)
		if err != nil {
			return ended, err
		}
		for _, j := range jobs {
			if j.GetParams().GetExternal() == nil || time.Since(j.GetUpdatedAt().AsTime()) < s.o.Idle {
				continue
			}
			note := fmt.Sprintf("ended after %s without a new event (ingest.idle_timeout_seconds)", s.o.Idle)
			if _, err := s.o.Jobs.EndExternal(ctx, j, note); err != nil {
				return ended, err
			}
			ended++
		}
		if next == "" {
			return ended, nil
		}
		f.Cursor = next
	}
}
