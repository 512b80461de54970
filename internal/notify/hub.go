// Package notify wakes goroutines waiting for something to change: a job's
// log grew, a queue got a job. It carries no data, only "look again", so a
// waiter that is slow or away misses nothing: it re-reads the store, which
// holds everything. That is how spool never drops an event for a slow reader.
package notify

import "sync"

// Hub hands out per-key channels that are closed on the next Notify of the
// key. The zero value is ready to use.
type Hub struct {
	mu sync.Mutex
	m  map[string]chan struct{}
}

// Watch returns a channel closed at the next Notify(key) after this call.
// Take it before reading the state it guards, then wait on it.
func (h *Hub) Watch(key string) <-chan struct{} {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.m == nil {
		h.m = make(map[string]chan struct{})
	}
	ch, ok := h.m[key]
	if !ok {
		ch = make(chan struct{})
		h.m[key] = ch
	}
	return ch
}

// Notify wakes everyone watching key. It never blocks.
func (h *Hub) Notify(key string) {
	h.mu.Lock()
	ch, ok := h.m[key]
	if ok {
		delete(h.m, key)
	}
	h.mu.Unlock()
	if ok {
		close(ch)
	}
}

// Len is the number of keys with a pending channel (for tests and metrics).
func (h *Hub) Len() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.m)
}
