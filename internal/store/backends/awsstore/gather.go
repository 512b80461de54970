package awsstore

import (
	"context"
	"slices"
	"sync"
	"sync/atomic"
)

// Gathering calls. SQS bills and throttles by request, and a batch request
// of up to 10 messages costs what a request of one does; the service
// enqueues an EnqueueJobs call's jobs and completes a worker's batch side
// by side, so many sends and deletes for one queue arrive at once. A
// gatherer lets them share requests without making anyone wait on a
// timer: a call that finds nothing in flight for its queue goes at once,
// alone; calls that arrive while one is in flight wait and go together in
// the next, which leaves when that one is answered. Waiting costs a caller
// at most one request's time, about what its own request would have
// taken. So that a burst is not held to one request at a time, a full
// batch does not wait: it goes at once, up to maxFlights requests in
// flight per queue. Each caller is answered when its own entry is, with
// its own outcome.
//
// A caller whose ctx ends while its entry waits gets ctx's error and the
// entry is not sent. One whose ctx ends once its entry is taken gets ctx's
// error at once too, and its entry may or may not be sent, as when a
// request of its own is cut short. The request goes on for the others: its
// context carries the first entry's values and ends only when every
// entry's ctx has ended.

const (
	// sqsBatchMax is the most entries one SQS batch request takes.
	sqsBatchMax = 10
	// maxFlights bounds the requests a gatherer has in flight for one
	// key: enough that a burst (EnqueueJobs runs 128 enqueues at once) is
	// not sent one request at a time, each request still carrying ten.
	maxFlights = 8
)

// gathered is one caller's entry: its item, then, once its request is
// answered (done is closed), its outcome.
type gathered[T any] struct {
	ctx  context.Context
	item T
	err  error
	done chan struct{}
}

// gatherer groups the entries given to do for the same key (a queue's URL)
// into batches of up to max, and runs each batch with call, which sets
// every entry's err.
type gatherer[T any] struct {
	max  int
	call func(ctx context.Context, key string, batch []*gathered[T])

	mu    sync.Mutex
	lanes map[string]*lane[T]
}

// lane is one key's entries waiting, and how many of its batches are in
// flight.
type lane[T any] struct {
	waiting []*gathered[T]
	flying  int
}

func newGatherer[T any](max int, call func(ctx context.Context, key string, batch []*gathered[T])) *gatherer[T] {
	return &gatherer[T]{max: max, call: call, lanes: map[string]*lane[T]{}}
}

// do runs item in a batch of key's and returns its outcome.
func (g *gatherer[T]) do(ctx context.Context, key string, item T) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	p := &gathered[T]{ctx: ctx, item: item, done: make(chan struct{})}
	g.mu.Lock()
	l := g.lanes[key]
	if l == nil {
		l = &lane[T]{}
		g.lanes[key] = l
	}
	l.waiting = append(l.waiting, p)
	batch := g.take(l)
	g.mu.Unlock()
	if batch != nil {
		go g.fly(key, l, batch)
	}
	select {
	case <-p.done:
		return p.err
	case <-ctx.Done():
	}
	select {
	case <-p.done: // answered as ctx ended
		return p.err
	default:
	}
	g.mu.Lock()
	if i := slices.Index(l.waiting, p); i >= 0 {
		l.waiting = slices.Delete(l.waiting, i, i+1)
		g.forget(key, l)
	}
	g.mu.Unlock()
	// Taken or not, the caller is answered now; an entry already taken
	// goes on for the sake of the others in its request.
	return ctx.Err()
}

// take removes the next batch from l's waiting entries, if one is to go
// now: when nothing of l's is in flight, whatever waits; otherwise only a
// full batch, while fewer than maxFlights are in flight. Entries whose
// caller gave up are answered with their ctx's error on the way.
func (g *gatherer[T]) take(l *lane[T]) []*gathered[T] {
	l.waiting = slices.DeleteFunc(l.waiting, func(p *gathered[T]) bool {
		if err := p.ctx.Err(); err != nil {
			p.err = err
			close(p.done)
			return true
		}
		return false
	})
	if len(l.waiting) == 0 || (l.flying > 0 && (len(l.waiting) < g.max || l.flying >= maxFlights)) {
		return nil
	}
	n := min(len(l.waiting), g.max)
	batch := slices.Clone(l.waiting[:n])
	l.waiting = slices.Delete(l.waiting, 0, n)
	l.flying++
	return batch
}

// forget drops key's lane once it has nothing waiting or in flight.
func (g *gatherer[T]) forget(key string, l *lane[T]) {
	if len(l.waiting) == 0 && l.flying == 0 {
		delete(g.lanes, key)
	}
}

// fly runs batch, answers its callers, and goes on with the next batch of
// the lane while there is one to go.
func (g *gatherer[T]) fly(key string, l *lane[T], batch []*gathered[T]) {
	for batch != nil {
		ctx, stop := joinContexts(batch)
		g.call(ctx, key, batch)
		stop()
		for _, p := range batch {
			close(p.done)
		}
		g.mu.Lock()
		l.flying--
		batch = g.take(l)
		g.forget(key, l)
		g.mu.Unlock()
	}
}

// joinContexts is the context of a request made for batch: the first
// entry's values, ended once every entry's ctx has ended. stop releases
// it.
func joinContexts[T any](batch []*gathered[T]) (ctx context.Context, stop func()) {
	ctx, cancel := context.WithCancel(context.WithoutCancel(batch[0].ctx))
	var left atomic.Int64
	left.Store(int64(len(batch)))
	stops := make([]func() bool, len(batch))
	for i, p := range batch {
		stops[i] = context.AfterFunc(p.ctx, func() {
			if left.Add(-1) == 0 {
				cancel()
			}
		})
	}
	return ctx, func() {
		for _, s := range stops {
			s()
		}
		cancel()
	}
}
