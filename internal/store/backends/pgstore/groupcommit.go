package pgstore

import (
	"context"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/spool-run/spool"
	"github.com/spool-run/spool/internal/apierr"
)

// Group commit. A job's hot writes (its completion, its output, a new job)
// are each a tiny transaction, and what such a transaction costs is not
// its statements but its round trips and its commit: PostgreSQL flushes
// the WAL once per commit, and many servers' goroutines each waiting for
// their own flush keep the database busy doing little. So the writes that
// arrive while a group is being committed wait, and go together in the
// next transaction: one BEGIN, one locked read of all their rows, one
// COMMIT. Each caller is still answered only once its write is committed,
// and a write that fails on its own (a stale lease, a job not found) fails
// alone, as its own transaction would have. With one caller at a time
// nothing waits: its write is taken at once, in a group of one, and runs
// on the caller's own goroutine.
//
// When a group's transaction fails as a whole (a statement refused, a
// deadlock, a lost connection), nobody can tell which write was to blame,
// so each of them runs again alone on the path the store used before
// grouping, which also retries what lost a race: a bad write then fails
// only itself.

const (
	// maxGroup bounds the row writes of one transaction: a group's locks
	// are held and its statements sent together, and a burst of writers (a
	// service completing a hundred jobs at once) fits in one.
	maxGroup = 128
	// maxEnqueueGroup bounds the new jobs of one insert: they lock nothing
	// another write waits for, and the jobs of bulk submissions (an
	// EnqueueJobs call sends hundreds side by side) go in few statements.
	maxEnqueueGroup = 1024
	// maxGroupBytes bounds what a group sends beyond its first write, so
	// that large appends do not make one transaction (and everyone's wait
	// for it) grow without end.
	maxGroupBytes = 4 << 20
)

// errClosed answers writes that arrive after Close.
var errClosed = apierr.Errorf(spool.ErrUnavailable, "postgres: the store is closed")

// pending is a write waiting for its group. keys name what it changes: two
// writes sharing a key never go in one group, the later waits for the next
// one so that it sees the first's effect. size is what it sends, roughly.
type pending[T any] struct {
	ctx  context.Context
	item T
	keys []string
	size int

	// err is the write's own failure; alone says that its group failed
	// as a whole and nothing of it was written: the caller runs it alone.
	err   error
	alone bool
	done  chan struct{}
}

// grouper gathers writes into groups and runs one group at a time, with
// run, which sets every write's err or alone. There is no goroutine of its
// own: a write that finds no group running leads, running the groups
// itself until its own is done, so a lone caller's write runs on its own
// goroutine at once; if writes queued meanwhile, a new goroutine leads on.
type grouper[T any] struct {
	max int // the most writes a group takes
	run func(group []*pending[T])

	mu      sync.Mutex
	queue   []*pending[T]
	leading bool // a goroutine runs groups
	closed  bool
	leaders sync.WaitGroup

	// started and groups count the groups taken and those run to the
	// end, for tests.
	started, groups atomic.Int64
}

func newGrouper[T any](max int, run func(group []*pending[T])) *grouper[T] {
	return &grouper[T]{max: max, run: run}
}

// do queues item and waits until its group has run. A caller whose ctx
// ends before its write is taken into a group gets ctx's error and nothing
// is written; once taken, the write finishes whatever becomes of ctx.
func (g *grouper[T]) do(ctx context.Context, item T, keys []string, size int) (*pending[T], error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	p := &pending[T]{ctx: ctx, item: item, keys: keys, size: size, done: make(chan struct{})}
	g.mu.Lock()
	if g.closed {
		g.mu.Unlock()
		return nil, errClosed
	}
	g.queue = append(g.queue, p)
	if !g.leading {
		g.leading = true
		g.leaders.Add(1)
		g.mu.Unlock()
		g.lead(p)
		return p, nil
	}
	g.mu.Unlock()
	select {
	case <-p.done:
	case <-ctx.Done():
		g.mu.Lock()
		if i := slices.Index(g.queue, p); i >= 0 {
			g.queue = slices.Delete(g.queue, i, i+1)
			g.mu.Unlock()
			return nil, ctx.Err()
		}
		g.mu.Unlock()
		<-p.done
	}
	return p, nil
}

// lead runs groups while writes wait, until the group of mine (nil: none)
// has run; then, if writes still wait, it hands the lead to a new
// goroutine, so that its caller is answered.
func (g *grouper[T]) lead(mine *pending[T]) {
	defer g.leaders.Done()
	for {
		group := g.take()
		if len(group) == 0 {
			return
		}
		g.started.Add(1)
		g.run(group)
		g.groups.Add(1)
		for _, p := range group {
			close(p.done)
		}
		if mine == nil {
			continue
		}
		select {
		case <-mine.done:
		default:
			continue
		}
		g.mu.Lock()
		if len(g.queue) == 0 {
			g.leading = false
		} else {
			g.leaders.Add(1)
			go g.lead(nil)
		}
		g.mu.Unlock()
		return
	}
}

// take removes the next group from the queue: the writes in the order they
// came, but for those whose caller gave up (answered here with its ctx's
// error) and those sharing a key with a write taken before them, which
// stay for a later group, in their order. When nothing is left to take,
// the lead ends.
func (g *grouper[T]) take() []*pending[T] {
	g.mu.Lock()
	defer g.mu.Unlock()
	var (
		group []*pending[T]
		keep  = g.queue[:0]
		taken = map[string]bool{}
		bytes int
	)
	for i, p := range g.queue {
		if err := p.ctx.Err(); err != nil {
			p.err = err
			close(p.done)
			continue
		}
		if len(group) == g.max || (len(group) > 0 && bytes+p.size > maxGroupBytes) {
			keep = append(keep, g.queue[i:]...)
			break
		}
		if slices.ContainsFunc(p.keys, func(k string) bool { return taken[k] }) {
			keep = append(keep, p)
			// What comes after it with another of its keys waits too.
			for _, k := range p.keys {
				taken[k] = true
			}
			continue
		}
		for _, k := range p.keys {
			taken[k] = true
		}
		bytes += p.size
		group = append(group, p)
	}
	clear(g.queue[len(keep):])
	g.queue = keep
	if len(group) == 0 {
		// The queue is empty: a write that waits is always taken when
		// it comes first.
		g.leading = false
	}
	return group
}

// close refuses new writes and waits for those queued to run.
func (g *grouper[T]) close() {
	g.mu.Lock()
	g.closed = true
	g.mu.Unlock()
	g.leaders.Wait()
}

// queued is how many writes wait, for tests.
func (g *grouper[T]) queued() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return len(g.queue)
}
