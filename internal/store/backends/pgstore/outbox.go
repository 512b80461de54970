package pgstore

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
)

// A NOTIFY inside a writing transaction would tell the other servers of a
// change exactly when it commits, but PostgreSQL commits such transactions
// one at a time (it holds a database-wide lock on the notification queue
// through the commit's flush to disk), so every write would wait for every
// other: a few hundred jobs a second on a disk that commits thousands of
// plain transactions. So writes commit without notifying, and the outbox
// sends their notes just after, many transactions' notes in one NOTIFY
// round. A server killed between a commit and its round loses those
// notes; the servers that stay notice it stopped (see servers.go) and wake
// all their waiters to look again, so the change is seen late, never lost.
const (
	// outboxChunk bounds the payloads sent in one statement.
	outboxChunk = 1000
	// outboxRetryMax bounds the wait between tries while the database
	// does not answer; the notes wait, merged with newer ones.
	outboxRetryMax = 2 * time.Second
	// outboxCloseWait bounds how long Close waits to send what is left.
	outboxCloseWait = 5 * time.Second
)

// outbox holds the notes of committed writes until they are sent. Notes
// that wake the same waiters are merged: only the newest of them is sent.
type outbox struct {
	pool *pgxpool.Pool
	log  *slog.Logger

	mu      sync.Mutex
	pending map[string]string // hub key -> newest payload
	order   []string          // hub keys in the order first noted

	kick chan struct{}
	quit chan struct{}
	done chan struct{}
}

func newOutbox(pool *pgxpool.Pool, log *slog.Logger) *outbox {
	o := &outbox{pool: pool, log: log, pending: map[string]string{},
		kick: make(chan struct{}, 1), quit: make(chan struct{}), done: make(chan struct{})}
	go o.run()
	return o
}

// add queues the notes of a committed transaction. It does not wait for
// them to go out.
func (o *outbox) add(n notes) {
	if len(n) == 0 {
		return
	}
	o.mu.Lock()
	for _, p := range n {
		k := hubKey(p)
		if _, ok := o.pending[k]; !ok {
			o.order = append(o.order, k)
		}
		o.pending[k] = p
	}
	o.mu.Unlock()
	select {
	case o.kick <- struct{}{}:
	default:
	}
}

// take empties the outbox and returns what it held, oldest first.
func (o *outbox) take() []string {
	o.mu.Lock()
	defer o.mu.Unlock()
	out := make([]string, 0, len(o.order))
	for _, k := range o.order {
		out = append(out, o.pending[k])
	}
	clear(o.pending)
	o.order = o.order[:0]
	return out
}

// run sends the notes as they come: one round carries everything noted
// while the previous one was on its way.
func (o *outbox) run() {
	defer close(o.done)
	var retry time.Duration
	for {
		// While the database does not answer, new notes wait for the
		// next try instead of hurrying it.
		kick, again := o.kick, (<-chan time.Time)(nil)
		if retry > 0 {
			kick, again = nil, time.After(retry)
		}
		select {
		case <-o.quit:
			ctx, cancel := context.WithTimeout(context.Background(), outboxCloseWait)
			if err := o.send(ctx, o.take()); err != nil {
				o.log.Warn("could not tell the other servers of the last changes made here; they see them when they next look", "error", err)
			}
			cancel()
			return
		case <-kick:
		case <-again:
		}
		payloads := o.take()
		if len(payloads) == 0 {
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), listenIdle)
		err := o.send(ctx, payloads)
		cancel()
		if err == nil {
			retry = 0
			continue
		}
		o.putBack(payloads)
		if retry == 0 {
			o.log.Warn("could not tell the other servers of changes made here; retrying", "error", err)
		}
		retry = min(max(2*retry, 50*time.Millisecond), outboxRetryMax)
	}
}

// putBack returns unsent payloads to the outbox, ahead of what was noted
// since; a newer note of the same key wins.
func (o *outbox) putBack(payloads []string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	var order []string
	for _, p := range payloads {
		k := hubKey(p)
		if _, ok := o.pending[k]; !ok {
			o.pending[k] = p
			order = append(order, k)
		}
	}
	o.order = append(order, o.order...)
}

// send notifies payloads, a chunk per statement.
func (o *outbox) send(ctx context.Context, payloads []string) error {
	for len(payloads) > 0 {
		k := min(len(payloads), outboxChunk)
		if err := notifyNow(ctx, o.pool, payloads[:k]); err != nil {
			return err
		}
		payloads = payloads[k:]
	}
	return nil
}

// close sends what is left and stops.
func (o *outbox) close() {
	close(o.quit)
	<-o.done
}
