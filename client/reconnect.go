package client

import (
	"errors"
	"syscall"
	"time"

	"connectrpc.com/connect"

	"github.com/spool-run/spool"
	"github.com/spool-run/spool/internal/backoff"
	"github.com/spool-run/spool/internal/wire"
)

// Reconnect says how a stream rides out transient failures: the server
// restarting (it ends streams with Unavailable when it shuts down), a
// refused or reset connection, a transport timeout, throttling.
//
// The zero value is the default policy.
type Reconnect struct {
	// First pause before reconnecting (default 100ms). Each failure without
	// progress doubles it, up to Max; progress (a message received, or a
	// connection that stayed up longer than Max) starts over from First.
	First time.Duration
	// Longest pause (default 5s).
	Max time.Duration
	// Give up when the stream has made no progress for this long (default
	// 2m; negative: never give up, only the context ends the stream).
	GiveUpAfter time.Duration
	// OnRetry, if set, is told about each reconnect before its pause: why
	// the stream was lost and how long it will wait. It is called on the
	// goroutine that ranges over the stream, between two events.
	OnRetry func(err error, wait time.Duration)
}

const (
	defaultFirstPause  = 100 * time.Millisecond
	defaultMaxPause    = 5 * time.Second
	defaultGiveUpAfter = 2 * time.Minute
)

// retrier is a Reconnect policy applied to one stream.
type retrier struct {
	policy Reconnect
	delays *backoff.Backoff
	since  time.Time // last progress (or the start)
}

func newRetrier(p Reconnect) *retrier {
	if p.First <= 0 {
		p.First = defaultFirstPause
	}
	if p.Max <= 0 {
		p.Max = defaultMaxPause
	}
	p.Max = max(p.Max, p.First)
	if p.GiveUpAfter == 0 {
		p.GiveUpAfter = defaultGiveUpAfter
	}
	return &retrier{policy: p, delays: backoff.New(p.First, p.Max), since: time.Now()}
}

// progress records that the stream got somewhere: the next failure is a new
// incident and starts with the shortest pause.
func (r *retrier) progress() {
	r.delays.Reset()
	r.since = time.Now()
}

// next returns how long to wait before the next attempt, or false when the
// stream has made no progress for longer than the policy allows.
func (r *retrier) next() (time.Duration, bool) {
	wait := r.delays.Delay()
	if r.policy.GiveUpAfter > 0 && time.Since(r.since)+wait > r.policy.GiveUpAfter {
		return 0, false
	}
	return wait, true
}

// isTransient reports whether a stream that failed with err may succeed if
// it reconnects: the server went away or could not be reached, the
// connection was cut, the transport timed out, or the server throttled us.
// Anything else (NotFound, InvalidArgument, PermissionDenied…) would fail
// the same way again.
func isTransient(err error) bool {
	switch connect.CodeOf(err) {
	case connect.CodeUnavailable, connect.CodeDeadlineExceeded, connect.CodeResourceExhausted:
		return true
	}
	// Every error here comes from the stream, so a network error is the
	// connection's.
	return errors.Is(err, spool.ErrUnavailable) || wire.ConnectionLost(err) || errors.Is(err, syscall.ECONNREFUSED)
}
