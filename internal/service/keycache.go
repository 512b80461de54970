package service

import (
	"context"
	"sync"
	"time"

	"golang.org/x/sync/singleflight"

	"github.com/spool-run/spool/internal/store"
)

// Every call names its key, and reading the key from the store on every
// call was one round trip to the database per call: on a busy queue, as
// many reads as jobs. So each server keeps the keys it read for a short
// while. What it keeps can be out of date only by that while: a key
// revoked through another server sharing the store is refused here within
// keyFresh, and one revoked through this server at once (RevokeKey drops it
// here). Unknown keys are never kept, so a key made on another server works
// here on its first call, and guessing keys costs the guesser a read each,
// not this server its memory.

// keyFresh is how long a key read from the store is trusted. Revoking a key
// promises that every server refuses it within a second; this leaves room
// for a read that was on its way when the key was revoked.
const keyFresh = 500 * time.Millisecond

// keyCacheSweepAt is the number of keys kept beyond which the ones past
// their time are dropped (a server sees few keys; this bounds a server
// that sees many).
const keyCacheSweepAt = 1024

// keyCache holds the keys this server read lately, by hash.
type keyCache struct {
	mu    sync.Mutex
	keys  map[string]cachedKey
	reads singleflight.Group // one read per key at a time, however many calls wait for it
	// gen counts drops: a read that began before a drop must not put back
	// what was read before it.
	gen uint64
}

type cachedKey struct {
	rec  store.KeyRecord
	read time.Time
}

// keyByHash returns the key whose secret hashes to hash, from what this
// server read less than keyFresh ago, or else from the store.
func (s *Service) keyByHash(ctx context.Context, hash string) (store.KeyRecord, error) {
	c := &s.keyCache
	now := time.Now()
	c.mu.Lock()
	k, ok := c.keys[hash]
	gen := c.gen
	c.mu.Unlock()
	if ok && now.Sub(k.read) < keyFresh {
		return k.rec, nil
	}
	// Calls for one key that arrive together share one read; each waits
	// for it under its own context.
	ch := c.reads.DoChan(hash, func() (any, error) {
		read := time.Now()
		rec, err := s.store.KeyByHash(context.WithoutCancel(ctx), hash)
		if err == nil {
			c.put(hash, cachedKey{rec: rec, read: read}, gen)
		}
		return rec, err
	})
	select {
	case r := <-ch:
		if r.Err != nil {
			return store.KeyRecord{}, r.Err
		}
		return r.Val.(store.KeyRecord), nil
	case <-ctx.Done():
		return store.KeyRecord{}, ctx.Err()
	}
}

// put keeps a key read from the store, unless a drop came after the read
// began.
func (c *keyCache) put(hash string, k cachedKey, gen uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.gen != gen {
		return
	}
	if c.keys == nil {
		c.keys = map[string]cachedKey{}
	}
	if len(c.keys) >= keyCacheSweepAt {
		for h, old := range c.keys {
			if k.read.Sub(old.read) >= keyFresh {
				delete(c.keys, h)
			}
		}
	}
	c.keys[hash] = k
}

// forget drops every key kept: a key changed through this server is read
// again on its next use.
func (c *keyCache) forget() {
	c.mu.Lock()
	defer c.mu.Unlock()
	clear(c.keys)
	c.gen++
}
