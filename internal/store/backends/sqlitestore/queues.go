package sqlitestore

import (
	"context"
	"database/sql"
	"sync"
	"time"

	"github.com/spool-run/spool/internal/store"
	"github.com/spool-run/spool/internal/store/backends/sqlrows"
)

// QueueStats implements store.QueueStore with one grouped read of the jobs
// and one of the paused queues (sqlrows.QueueCounts, PausedQueues), from
// the reader pool.
func (s *Store) QueueStats(ctx context.Context, since time.Time) ([]store.QueueStats, error) {
	var t sqlrows.QueueTally
	if err := s.query(ctx, "count the jobs of each queue", t.AddCounts, sqlrows.QueueCounts, sqlrows.Micros(since)); err != nil {
		return nil, err
	}
	if err := s.query(ctx, "read the paused queues", t.AddPaused, sqlrows.PausedQueues); err != nil {
		return nil, err
	}
	return t.Stats(), nil
}

// EndedPerMinute implements store.QueueStore with one grouped read of the
// ended jobs (sqlrows.EndedPerMinute), from the reader pool.
func (s *Store) EndedPerMinute(ctx context.Context, since time.Time) ([]store.EndedMinute, error) {
	var t store.EndedTally
	add := func(rows sqlrows.Rows) error { return sqlrows.AddEnded(&t, rows) }
	if err := s.query(ctx, "count the jobs ended each minute", add, sqlrows.EndedPerMinute, sqlrows.Micros(since)); err != nil {
		return nil, err
	}
	return t.Minutes(), nil
}

// query runs q on the reader pool and hands its rows to collect.
func (s *Store) query(ctx context.Context, what string, collect func(sqlrows.Rows) error, q string, args ...any) error {
	rows, err := s.r.QueryContext(ctx, q, args...)
	if err != nil {
		return sqliteErr(err, "%s", what)
	}
	defer rows.Close()
	if err := collect(rows); err != nil {
		return sqliteErr(err, "%s", what)
	}
	return nil
}

// SetQueuePaused implements store.QueueStore. The paused queues in memory
// change once the change is committed, before the caller hears of it.
func (s *Store) SetQueuePaused(ctx context.Context, name string, paused bool, at time.Time) error {
	// One change at a time, so that the memory follows the commits in
	// their order (a pause and a resume racing would otherwise leave it
	// as the first committed).
	q, args := sqlrows.SetQueuePaused(name, paused, at)
	return s.setQueue(ctx, name, "pause or resume queue "+name, q, args, func() { s.queues.setPaused(name, paused) })
}

// SetQueueMaxRunning implements store.TimingStore. The limits in memory
// change once the change is committed; a limit raised or lifted wakes the
// queue's polls.
func (s *Store) SetQueueMaxRunning(ctx context.Context, name string, max int32) error {
	if err := sqlrows.CheckMaxRunning(name, max); err != nil {
		return err
	}
	q, args := sqlrows.SetQueueMaxRunning(name, max)
	return s.setQueue(ctx, name, "set the max_running of queue "+name, q, args, func() { s.queues.setMaxRunning(name, max) })
}

// setQueue writes a queue's setting with q and, once it is committed,
// changes the memory with set and wakes the queue's polls, to lease under
// the new setting.
func (s *Store) setQueue(ctx context.Context, name, what, q string, args []any, set func()) error {
	// One change at a time, so that the memory follows the commits in
	// their order (a pause and a resume racing would otherwise leave it
	// as the first committed).
	s.queues.changing.Lock()
	defer s.queues.changing.Unlock()
	err := s.write(ctx, func(ctx context.Context, tx *sql.Tx, n *notes) error {
		if _, err := tx.ExecContext(ctx, q, args...); err != nil {
			return sqliteErr(err, "%s", what)
		}
		n.queue(name)
		return nil
	})
	if err == nil {
		set()
	}
	return err
}

// QueuePaused implements store.QueueStore, from memory.
func (s *Store) QueuePaused(_ context.Context, name string) (bool, error) {
	return s.queues.paused(name), nil
}

// queueSettings are the paused queues and the queues' limits on running
// jobs, as committed. Every lease asks whether its queue is paused, before
// it leases and again after (a pause acknowledged lets no job start), and
// its limit, and on a worker polling for short jobs those reads of the
// database were most of what a lease cost. A data directory is one
// server's (the server locks it) and this store's writer is the only
// connection that changes them, so the settings read once at Open and
// kept up to date by SetQueuePaused and SetQueueMaxRunning are the
// database's.
type queueSettings struct {
	changing sync.Mutex // held by setQueue from its write to its change
	mu       sync.RWMutex
	names    map[string]bool
	limits   map[string]int32
}

// load reads the queues' settings from the database.
func (p *queueSettings) load(ctx context.Context, r *sql.DB) error {
	var t sqlrows.QueueTally
	rows, err := r.QueryContext(ctx, sqlrows.PausedQueues)
	if err != nil {
		return sqliteErr(err, "read the paused queues")
	}
	defer rows.Close()
	if err := t.AddPaused(rows); err != nil {
		return sqliteErr(err, "read the paused queues")
	}
	names, limits := map[string]bool{}, map[string]int32{}
	for _, q := range t.Stats() {
		if q.Paused {
			names[q.Name] = true
		}
		if q.MaxRunning > 0 {
			limits[q.Name] = q.MaxRunning
		}
	}
	p.mu.Lock()
	p.names, p.limits = names, limits
	p.mu.Unlock()
	return nil
}

func (p *queueSettings) setPaused(name string, paused bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.names == nil {
		p.names = map[string]bool{}
	}
	if paused {
		p.names[name] = true
	} else {
		delete(p.names, name)
	}
}

func (p *queueSettings) setMaxRunning(name string, max int32) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.limits == nil {
		p.limits = map[string]int32{}
	}
	if max > 0 {
		p.limits[name] = max
	} else {
		delete(p.limits, name)
	}
}

func (p *queueSettings) paused(name string) bool {
	p.mu.RLock()
	defer p.mu.RUnlock()
	return p.names[name]
}

func (p *queueSettings) maxRunning(name string) int32 {
	p.mu.RLock()
	defer p.mu.RUnlock()
	return p.limits[name]
}
