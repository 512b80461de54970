// Package backoff spaces out retries: exponential growth with full jitter,
// so many workers retrying against a server that is coming back do not
// arrive in lockstep.
package backoff

import (
	"context"
	"math/rand/v2"
	"time"
)

// Backoff hands out growing delays. The zero value is not usable: use New.
type Backoff struct {
	min, max time.Duration
	next     time.Duration
}

// New returns a backoff starting at min and capped at max.
func New(min, max time.Duration) *Backoff {
	return &Backoff{min: min, max: max, next: min}
}

// Delay returns the next delay: a random duration in [d/2, d] where d
// doubles each call up to max.
func (b *Backoff) Delay() time.Duration {
	d := b.next
	b.next = min(b.next*2, b.max)
	return d/2 + rand.N(d/2+1)
}

// Reset starts over from min, after a success.
func (b *Backoff) Reset() { b.next = b.min }

// Wait sleeps for the next delay, or until ctx ends (returning its error).
func (b *Backoff) Wait(ctx context.Context) error { return Sleep(ctx, b.Delay()) }

// Sleep waits for d, or until ctx ends (returning its error).
func Sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
