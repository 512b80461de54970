package service

import (
	"context"
	"log/slog"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/spool-run/spool/internal/store"
	"github.com/spool-run/spool/internal/store/storekit"
)

// pollerWindow is how long a worker counts as polling a queue after it last
// asked for its jobs: longer than a long poll (20 s) and a worker's pause
// between polls.
const pollerWindow = time.Minute

// How the servers sharing a store count each other's workers: a server
// with polling workers records them in the store at most every
// pollerShareEvery, and a count reads the others' records at most every
// sharedPollersFor. A worker that starts polling one server is counted by
// the others within about those two together.
const (
	pollerShareEvery   = 10 * time.Second
	sharedPollersFor   = 5 * time.Second
	pollerShareTimeout = 5 * time.Second
)

// pollers remembers which workers asked this server for which queue's jobs,
// and when. Where servers share the store (store.PollerSharer), each also
// records its workers there, and a queue's count is of the workers polling
// any server.
type pollers struct {
	// sharer is the store's PollerSharer, nil where this server's
	// workers are all there are.
	sharer store.PollerSharer
	log    *slog.Logger

	mu   sync.Mutex
	seen map[string]map[string]time.Time // queue -> worker -> last poll
	// pruned is when the polls older than pollerWindow were last
	// forgotten: a server nobody asks for its queues still keeps only the
	// last minute's workers, whatever names they send.
	pruned time.Time
	// resumed is closed and replaced when a queue is resumed here, so a
	// worker waiting out a pause takes the queue's jobs at once.
	resumed chan struct{}
	// pauseWaits counts the polls waiting out a pause here now.
	pauseWaits int
	// sharedAt is when this server last recorded its workers in the
	// store; sharing, that it is doing so now.
	sharedAt time.Time
	sharing  bool
	// others are the workers by queue the servers' records held when read
	// at othersAt.
	others   map[string][]string
	othersAt time.Time
}

// polled records that worker asked for queue's jobs at now.
func (p *pollers) polled(queue, worker string, now time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.seen == nil {
		p.seen = map[string]map[string]time.Time{}
	}
	ws := p.seen[queue]
	if ws == nil {
		ws = map[string]time.Time{}
		p.seen[queue] = ws
	}
	ws[worker] = now
	if now.Sub(p.pruned) > pollerWindow {
		p.prune(now)
	}
	if p.sharer != nil && !p.sharing && now.Sub(p.sharedAt) >= pollerShareEvery {
		p.sharing = true
		go p.share(p.names())
	}
}

// maxSharedPollers bounds the worker names a server records in the store:
// names come from the workers (worker_id, up to 200 bytes), and a worker
// key that made up a new one at every poll must not grow the record past
// what the store holds in one item (DynamoDB's 400 KB). Past it, other
// servers count fewer of this server's workers than it does itself.
const maxSharedPollers = 1000

// names returns the workers by queue seen within pollerWindow, at most
// maxSharedPollers of them; p.mu is held.
func (p *pollers) names() map[string][]string {
	out := make(map[string][]string, len(p.seen))
	left := maxSharedPollers
	for _, q := range slices.Sorted(maps.Keys(p.seen)) {
		if left == 0 {
			break
		}
		ws := slices.Sorted(maps.Keys(p.seen[q]))
		ws = ws[:min(len(ws), left)]
		out[q] = ws
		left -= len(ws)
	}
	return out
}

// share records polls as this server's workers in the store. It runs
// apart from the poll that started it, which must not wait on it.
func (p *pollers) share(polls map[string][]string) {
	ctx, cancel := context.WithTimeout(context.Background(), pollerShareTimeout)
	defer cancel()
	if err := p.sharer.SharePollers(ctx, polls); err != nil {
		p.log.Warn("could not record this server's workers in the store; other servers count them again once it answers", "error", err)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.sharing, p.sharedAt = false, storekit.Now()
}

// prune forgets the polls older than pollerWindow; p.mu is held.
func (p *pollers) prune(now time.Time) {
	for q, ws := range p.seen {
		for w, at := range ws {
			if now.Sub(at) > pollerWindow {
				delete(ws, w)
			}
		}
		if len(ws) == 0 {
			delete(p.seen, q)
		}
	}
	p.pruned = now
}

// counts returns how many workers polled each queue since now-pollerWindow,
// here or, where servers share the store, at any server, forgetting the
// older ones. A store that does not answer leaves this server's count.
func (p *pollers) counts(ctx context.Context, now time.Time) map[string]int32 {
	others := p.othersSince(ctx, now)
	p.mu.Lock()
	defer p.mu.Unlock()
	p.prune(now)
	names := map[string]map[string]bool{}
	add := func(q, w string) {
		if names[q] == nil {
			names[q] = map[string]bool{}
		}
		names[q][w] = true
	}
	for q, ws := range p.seen {
		for w := range ws {
			add(q, w)
		}
	}
	for q, ws := range others {
		for _, w := range ws {
			add(q, w)
		}
	}
	out := make(map[string]int32, len(names))
	for q, ws := range names {
		out[q] = int32(len(ws))
	}
	return out
}

// othersSince returns the workers by queue of every server's record
// written within pollerWindow, read at most every sharedPollersFor.
func (p *pollers) othersSince(ctx context.Context, now time.Time) map[string][]string {
	if p.sharer == nil {
		return nil
	}
	p.mu.Lock()
	fresh := now.Sub(p.othersAt) < sharedPollersFor
	others := p.others
	p.mu.Unlock()
	if fresh {
		return others
	}
	others, err := p.sharer.SharedPollers(ctx, now.Add(-pollerWindow))
	if err != nil {
		p.log.Warn("could not read the other servers' workers; counting this server's only", "error", err)
		return nil
	}
	p.mu.Lock()
	p.others, p.othersAt = others, now
	p.mu.Unlock()
	return others
}

// resumeSignal returns a channel closed at the next resume on this server.
func (p *pollers) resumeSignal() <-chan struct{} {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.resumed == nil {
		p.resumed = make(chan struct{})
	}
	return p.resumed
}

// waitingOutPause adds d to the polls waiting out a pause and returns how
// many there are.
func (p *pollers) waitingOutPause(d int) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.pauseWaits += d
	return p.pauseWaits
}

// wakeResumed wakes the workers waiting out a pause here.
func (p *pollers) wakeResumed() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.resumed != nil {
		close(p.resumed)
		p.resumed = nil
	}
}
