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
	s.paused.changing.Lock()
	defer s.paused.changing.Unlock()
	err := s.write(ctx, func(ctx context.Context, tx *sql.Tx, _ *notes) error {
		q, args := sqlrows.SetQueuePaused(name, paused, at)
		if _, err := tx.ExecContext(ctx, q, args...); err != nil {
			return sqliteErr(err, "pause or resume queue %q", name)
		}
		return nil
	})
	if err == nil {
		s.paused.set(name, paused)
	}
	return err
}

// QueuePaused implements store.QueueStore, from memory.
func (s *Store) QueuePaused(_ context.Context, name string) (bool, error) {
	return s.paused.has(name), nil
}

// pausedQueues are the names of the paused queues, as committed. Every
// lease asks whether its queue is paused, before it leases and again after
// (a pause acknowledged lets no job start), and on a worker polling for
// short jobs those two reads of the database were most of what a lease
// cost. A data directory is one server's (the server locks it) and this
// store's writer is the only connection that pauses or resumes, so the
// names read once at Open and kept up to date by SetQueuePaused are the
// database's.
type pausedQueues struct {
	changing sync.Mutex // held by SetQueuePaused from its write to set
	mu       sync.RWMutex
	names    map[string]bool
}

// load reads the paused queues from the database.
func (p *pausedQueues) load(ctx context.Context, r *sql.DB) error {
	var t sqlrows.QueueTally
	rows, err := r.QueryContext(ctx, sqlrows.PausedQueues)
	if err != nil {
		return sqliteErr(err, "read the paused queues")
	}
	defer rows.Close()
	if err := t.AddPaused(rows); err != nil {
		return sqliteErr(err, "read the paused queues")
	}
	names := map[string]bool{}
	for _, q := range t.Stats() {
		names[q.Name] = true
	}
	p.mu.Lock()
	p.names = names
	p.mu.Unlock()
	return nil
}

func (p *pausedQueues) set(name string, paused bool) {
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

func (p *pausedQueues) has(name string) bool {
	p.mu.RLock()
	defer p.mu.RUnlock()
	return p.names[name]
}
