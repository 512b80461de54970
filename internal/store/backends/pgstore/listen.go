package pgstore

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	spoolv1 "github.com/spool-run/spool/gen/spool/v1"
	"github.com/spool-run/spool/internal/store"
	"github.com/spool-run/spool/internal/store/storekit"
)

// channel is the one NOTIFY channel every server listens on. A note
// starts with what changed: "job:ID" (its state or notes; after an append,
// followed by the log's new head "job:ID NEXT_SEQUENCE NEXT_LINE"),
// "queue:NAME" (a job there may be ready), or "watch:" (which jobs a server
// follows, see watches). A notification holds one note, or several packed
// (see pack).
const channel = "spool_changes"

// How the listening connection is kept honest: after listenIdle without a
// notification it is pinged, and a lost one is dialled again with a
// backoff that grows to listenBackoffMax.
const (
	listenIdle       = 10 * time.Second
	listenBackoffMax = 5 * time.Second
)

// listenAppName names the listening connection in pg_stat_activity.
const listenAppName = "spool-listen"

func jobKey(id string) string { return "job:" + id }

// notes collects what a transaction changed. Once it commits they wake
// this server's own waiters and go to the outbox, which tells the others.
type notes []string

func (n *notes) job(id string)  { *n = append(*n, jobKey(id)) }
func (n *notes) queue(q string) { *n = append(*n, storekit.QueueKey(q)) }

// head notes an append: the job and its log's new head.
func (n *notes) head(id string, h store.Head) {
	*n = append(*n, fmt.Sprintf("%s %d %d", jobKey(id), h.NextSequence, h.NextLine))
}

// created notes a new job: its queue's, when it can be leased now (a
// SCHEDULED one waits for its promotion, which wakes the queue then).
func (n *notes) created(j *spoolv1.Job) {
	if j.GetState() == spoolv1.JobState_JOB_STATE_QUEUED {
		n.queue(j.GetQueue())
	}
}

// settled notes a job whose lease ended: its watchers, and its queue's when
// it is queued again.
func (n *notes) settled(j *spoolv1.Job, o storekit.Outcome) {
	n.job(j.GetJobId())
	if o.State == spoolv1.JobState_JOB_STATE_QUEUED {
		n.queue(j.GetQueue())
	}
}

// wake wakes this server's waiters of everything noted.
func (s *Store) wake(n notes) {
	for _, p := range n {
		storekit.Wake(&s.hub, &s.polls, hubKey(p))
	}
}

// wakeAll wakes every waiter here, to look again: for when changes may
// have been missed.
func (s *Store) wakeAll() {
	s.hub.NotifyAll()
	s.polls.ReadyAll()
}

// hubKey is the waiters' key a payload names.
func hubKey(payload string) string {
	k, _, _ := strings.Cut(payload, " ")
	return k
}

// listenConn opens the connection that listens: its own, outside the pool,
// as LISTEN holds a session.
func (s *Store) listenConn(ctx context.Context) (*pgx.Conn, error) {
	cfg := s.pool.Config().ConnConfig.Copy()
	cfg.RuntimeParams["application_name"] = listenAppName
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return nil, err
	}
	if _, err := conn.Exec(ctx, "LISTEN "+channel); err != nil {
		_ = conn.Close(ctx)
		return nil, err
	}
	return conn, nil
}

// listen hands every notification to this server's waiters until ctx ends,
// and dials again whenever the connection is lost.
func (s *Store) listen(ctx context.Context, conn *pgx.Conn) {
	defer close(s.done)
	for {
		err := s.receive(ctx, conn)
		_ = conn.Close(context.Background())
		if ctx.Err() != nil {
			return
		}
		s.log.Warn("lost the database connection that carries other servers' changes; reconnecting", "error", err)
		conn = s.redial(ctx)
		if conn == nil {
			return
		}
		s.log.Info("listening for other servers' changes again")
		// What changed while the connection was down was not heard:
		// every waiter looks again, and the others hear again what is
		// followed here.
		s.wakeAll()
		s.watches.resync()
	}
}

// redial connects and listens again, with backoff, until it works or ctx
// ends (nil).
func (s *Store) redial(ctx context.Context) *pgx.Conn {
	backoff := 100 * time.Millisecond
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(backoff):
		}
		conn, err := s.listenConn(ctx)
		if err == nil {
			return conn
		}
		if ctx.Err() != nil {
			return nil
		}
		backoff = min(2*backoff, listenBackoffMax)
		s.log.Warn("cannot listen for other servers' changes yet", "error", err, "retry_in", backoff)
	}
}

// receive dispatches notifications until the connection fails or ctx ends.
// A quiet connection is pinged, so a silently dropped one is noticed.
func (s *Store) receive(ctx context.Context, conn *pgx.Conn) error {
	for {
		wctx, cancel := context.WithTimeout(ctx, listenIdle)
		n, err := conn.WaitForNotification(wctx)
		cancel()
		switch {
		case err == nil:
			s.dispatch(n.Payload)
			continue
		case ctx.Err() != nil:
			return ctx.Err()
		case !pgconn.Timeout(err):
			return err
		}
		pctx, cancel := context.WithTimeout(ctx, listenIdle)
		err = conn.Ping(pctx)
		cancel()
		if err != nil {
			return fmt.Errorf("the listening connection does not answer: %w", err)
		}
	}
}

// dispatch acts on one notification.
func (s *Store) dispatch(payload string) {
	for _, note := range unpack(payload) {
		if rest, ok := strings.CutPrefix(note, watchPrefix); ok {
			s.watches.heard(rest)
			continue
		}
		s.wake(notes{note})
	}
}

// notifyNow sends payloads outside any transaction, packed.
func notifyNow(ctx context.Context, pool *pgxpool.Pool, payloads []string) error {
	_, err := pool.Exec(ctx, `SELECT pg_notify($1, p) FROM unnest($2::text[]) AS p`, channel, pack(payloads))
	return err
}

// Packing. PostgreSQL's cost of a notification (its entry in the queue
// every listener reads, and its delivery to each of them) hardly depends
// on its size, and a busy queue notes two jobs a job (leased, then
// settled): sent one a notification, they cost the database about as
// much as the jobs' own writes. So notes go many to a notification, up to
// packMax bytes: "pack:" and then each note as its length in bytes, ":"
// and the note (a note may hold any character, so none can serve as a
// separator). A lone note goes as it is.
const (
	packPrefix = "pack:"
	packMax    = 7900 // PostgreSQL refuses a payload of 8,000 bytes or more
)

// pack returns payloads packed into as few notifications as fit.
func pack(payloads []string) []string {
	if len(payloads) == 0 || len(payloads) == 1 && !strings.HasPrefix(payloads[0], packPrefix) {
		return payloads
	}
	var (
		out  []string
		b    strings.Builder
		n    int    // notes in b
		last string // the last of them
	)
	flush := func() {
		switch n {
		case 0:
		case 1: // a pack of one: the note as it is, unless it looks packed
			if !strings.HasPrefix(last, packPrefix) {
				out = append(out, last)
				break
			}
			fallthrough
		default:
			out = append(out, b.String())
		}
		b.Reset()
		n = 0
	}
	for _, p := range payloads {
		entry := strconv.Itoa(len(p)) + ":" + p
		if n > 0 && b.Len()+len(entry) > packMax {
			flush()
		}
		if n == 0 {
			b.WriteString(packPrefix)
		}
		b.WriteString(entry)
		n, last = n+1, p
	}
	flush()
	return out
}

// unpack returns the notes a notification holds. A pack it cannot read
// (from a server that packs otherwise) yields what it read before the
// fault: notes missed are the same as notifications missed, which every
// waiter covers by looking again on its interval.
func unpack(payload string) []string {
	rest, ok := strings.CutPrefix(payload, packPrefix)
	if !ok {
		return []string{payload}
	}
	var out []string
	for rest != "" {
		size, after, ok := strings.Cut(rest, ":")
		n, err := strconv.Atoi(size)
		if !ok || err != nil || n < 0 || n > len(after) {
			break
		}
		out = append(out, after[:n])
		rest = after[n:]
	}
	return out
}
