package pgstore

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/spool-run/spool/internal/store"
	"github.com/spool-run/spool/internal/store/backends/sqlrows"
)

var (
	queueCounts    = sqlrows.Dollar(sqlrows.QueueCounts)
	endedPerMinute = sqlrows.Dollar(sqlrows.EndedPerMinute)
)

// selectQueuePaused says whether a queue is paused (argument: name): one
// search of the primary key of queues. Leases do not ask it: they read the
// pause in their own statement (leaseUnpaused).
const selectQueuePaused = `SELECT EXISTS (SELECT 1 FROM queues WHERE name = $1 AND paused_at IS NOT NULL)`

// QueueStats implements store.QueueStore: the grouped count of the jobs
// and the paused queues (sqlrows.QueueCounts, PausedQueues) in one round
// trip.
func (s *Store) QueueStats(ctx context.Context, since time.Time) ([]store.QueueStats, error) {
	b := &pgx.Batch{}
	b.Queue(queueCounts, sqlrows.Micros(since))
	b.Queue(sqlrows.PausedQueues)
	br := s.pool.SendBatch(ctx, b)
	defer br.Close()
	var t sqlrows.QueueTally
	for _, add := range []func(sqlrows.Rows) error{t.AddCounts, t.AddPaused} {
		rows, err := br.Query()
		if err == nil {
			err = add(rows)
			rows.Close()
		}
		if err != nil {
			return nil, pgErr(err, "count the jobs of each queue")
		}
	}
	if err := br.Close(); err != nil {
		return nil, pgErr(err, "count the jobs of each queue")
	}
	return t.Stats(), nil
}

// EndedPerMinute implements store.QueueStore with one grouped read of the
// ended jobs (sqlrows.EndedPerMinute).
func (s *Store) EndedPerMinute(ctx context.Context, since time.Time) ([]store.EndedMinute, error) {
	rows, err := s.pool.Query(ctx, endedPerMinute, sqlrows.Micros(since))
	if err != nil {
		return nil, pgErr(err, "count the jobs ended each minute")
	}
	defer rows.Close()
	var t store.EndedTally
	if err := sqlrows.AddEnded(&t, rows); err != nil {
		return nil, pgErr(err, "count the jobs ended each minute")
	}
	return t.Minutes(), nil
}

// A queue's pause lock orders its pauses with its leases (leaseUnpaused):
// an advisory lock of PostgreSQL's, in a class of spool's own, numbered by
// the hash of the queue's name. Two queues whose names hash alike share
// one, which only makes a pause of one wait for the other's leases.
const (
	pauseLockClass  = 0x73706f6f // "spoo"
	pauseLockShared = `SELECT pg_advisory_xact_lock_shared($1, hashtext($2))`
	pauseLock       = `SELECT pg_advisory_xact_lock($1, hashtext($2))`
)

// SetQueuePaused implements store.QueueStore in one round trip. Servers
// that pause one queue at once all succeed; the first time stays. A pause
// holds the queue's pause lock until it commits, so it waits for the
// leases under way and every lease after it sees it; a resume wakes the
// queue's polls on every server.
func (s *Store) SetQueuePaused(ctx context.Context, name string, paused bool, at time.Time) error {
	q, args := sqlrows.SetQueuePaused(name, paused, at)
	return s.writeOne(func(db querier, n *notes) error {
		b := &pgx.Batch{}
		if paused {
			b.Queue(pauseLock, pauseLockClass, name)
		} else {
			n.queue(name)
		}
		b.Queue(sqlrows.Dollar(q), args...)
		if err := db.SendBatch(ctx, b).Close(); err != nil {
			return pgErr(err, "pause or resume queue %q", name)
		}
		return nil
	})
}

// SetQueueMaxRunning implements store.TimingStore. Leases that follow see
// the limit (they read it under the limit lock); those under way finish
// with the limit they read. A limit raised or lifted wakes the queue's
// polls on every server.
func (s *Store) SetQueueMaxRunning(ctx context.Context, name string, max int32) error {
	if err := sqlrows.CheckMaxRunning(name, max); err != nil {
		return err
	}
	q, args := sqlrows.SetQueueMaxRunning(name, max)
	return s.writeOne(func(db querier, n *notes) error {
		if _, err := db.Exec(ctx, sqlrows.Dollar(q), args...); err != nil {
			return pgErr(err, "set the max_running of queue %q", name)
		}
		n.queue(name)
		return nil
	})
}

// QueuePaused implements store.QueueStore.
func (s *Store) QueuePaused(ctx context.Context, name string) (bool, error) {
	var paused bool
	if err := s.pool.QueryRow(ctx, selectQueuePaused, name).Scan(&paused); err != nil {
		return false, pgErr(err, "is queue %q paused", name)
	}
	return paused, nil
}
