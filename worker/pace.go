package worker

import (
	"context"
	"sync"
	"time"

	"github.com/spool-run/spool/internal/batcher"
)

// pace spaces an attempt's publishes while nobody watches the job. Lines
// that come faster than a batch fills make a full batch every moment, and
// each would go in a call of its own; held until the job's flush interval
// has passed since the last call, they go together, in one call: a job
// printing steadily is published once per interval, not once per batch,
// and each call is a write of the job's record in the store (a billed
// write on DynamoDB). Nobody is waiting for those lines meanwhile: a line
// of a batch that is not full waits the same interval. What the batcher
// sends for time (the first lines after a quiet spell, a flush interval,
// a process event) is due at once, as are a watcher's arrival, the
// command's end and a backlog (a chunk as large as a call takes).
type pace struct {
	interval time.Duration // the job's flush interval (0: never hold)
	clock    batcher.Clock

	mu      sync.Mutex
	watched bool
	change  chan struct{} // closed and replaced when watched changes or output is due
	// isDue: output that must not wait came since the last hold ended.
	isDue bool
}

func newPace(interval time.Duration, clock batcher.Clock) *pace {
	return &pace{interval: interval, clock: clock, change: make(chan struct{})}
}

// setWatched records whether someone watches the job; a hold in progress
// ends when someone starts to.
func (p *pace) setWatched(w bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.watched == w {
		return
	}
	p.watched = w
	p.wakeLocked()
}

// due says that output that must not wait is in the outbox: the next hold,
// or the one in progress, ends at once.
func (p *pace) due() {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.isDue = true
	p.wakeLocked()
}

func (p *pace) wakeLocked() {
	close(p.change)
	p.change = make(chan struct{})
}

// now is the pace's clock's time (zero for a nil pace, which never holds).
func (p *pace) now() time.Time {
	if p == nil {
		return time.Time{}
	}
	return p.clock.Now()
}

// hold waits until the interval has passed since last (the end of the last
// publish; zero: there was none), unless the job is watched or becomes so,
// output is due, ended closes, or ctx ends. A nil pace never holds.
func (p *pace) hold(ctx context.Context, last time.Time, ended <-chan struct{}) {
	if p == nil {
		return
	}
	// What is due when the hold ends goes in the read that follows it.
	defer func() {
		p.mu.Lock()
		p.isDue = false
		p.mu.Unlock()
	}()
	if p.interval <= 0 || last.IsZero() {
		return
	}
	p.mu.Lock()
	watched, due, change := p.watched, p.isDue, p.change
	p.mu.Unlock()
	left := p.interval - p.clock.Now().Sub(last)
	if watched || due || left <= 0 {
		return
	}
	select {
	case <-ended:
		return
	default:
	}
	passed := make(chan struct{})
	t := p.clock.AfterFunc(left, func() { close(passed) })
	defer t.Stop()
	select {
	case <-passed:
	case <-change:
	case <-ended:
	case <-ctx.Done():
	}
}

// setWatched tells the attempt's batcher and pace whether someone watches
// the job.
func (a *attempt) setWatched(w bool) {
	a.out.SetWatched(w)
	a.pace.setWatched(w)
}
