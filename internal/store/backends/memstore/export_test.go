package memstore

import "time"

// Watching is how many keys the store's hub keeps for waiters.
func Watching(s *Store) int { return s.hub.Len() }

// SetPollInterval sets how often the store's waiting dequeues look again
// unprompted. Call it before any Dequeue.
func SetPollInterval(s *Store, d time.Duration) { s.polls.Interval = d }

// Polling is how many dequeues of queue wait for a wake-up.
func Polling(s *Store, queue string) int { return s.polls.Sleeping(queue) }
