// Package notify wakes goroutines waiting for something to change: a job's
// log grew, a queue got a job. It carries no data, only "look again", so a
// waiter that is slow or away misses nothing: it re-reads the store, which
// holds everything. That is how spool never drops an event for a slow reader.
package notify

import (
	"context"
	"sync"
)

// Hub hands out per-key channels that are closed on the next Notify of the
// key. It keeps a key only while someone waits on it, so keys that anyone
// may name (queues, job ids) cost nothing once their waiters are gone. The
// zero value is ready to use.
type Hub struct {
	mu sync.Mutex
	m  map[string]*entry
}

// entry is a key's pending channel and how many waits hold it.
type entry struct {
	ch      chan struct{}
	waiters int
}

// Watch returns a channel closed at the next Notify(key) after this call.
// Take it before reading the state it guards, then wait on it.
//
// The wait lasts until ctx ends: scope ctx to the one wait (a waiter that
// loops takes a new context each time round), since the hub holds the key
// for it until then.
func (h *Hub) Watch(ctx context.Context, key string) <-chan struct{} {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.m == nil {
		h.m = make(map[string]*entry)
	}
	e, ok := h.m[key]
	if !ok {
		e = &entry{ch: make(chan struct{})}
		h.m[key] = e
	}
	e.waiters++
	context.AfterFunc(ctx, func() { h.release(key, e) })
	return e.ch
}

// release ends one wait on e, and forgets the key with its last.
func (h *Hub) release(key string, e *entry) {
	h.mu.Lock()
	defer h.mu.Unlock()
	e.waiters--
	// After a Notify the key may hold a newer entry, which is not ours.
	if e.waiters == 0 && h.m[key] == e {
		delete(h.m, key)
	}
}

// Notify wakes everyone watching key. It never blocks.
func (h *Hub) Notify(key string) {
	h.mu.Lock()
	e, ok := h.m[key]
	if ok {
		delete(h.m, key)
	}
	h.mu.Unlock()
	if ok {
		close(e.ch)
	}
}

// NotifyAll wakes every waiter of every key: for when changes may have
// been missed (a connection that carried them was lost), so that everyone
// looks again.
func (h *Hub) NotifyAll() {
	h.mu.Lock()
	m := h.m
	h.m = nil
	h.mu.Unlock()
	for _, e := range m {
		close(e.ch)
	}
}

// Len is the number of keys with a pending channel (for tests and metrics).
func (h *Hub) Len() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.m)
}
