package batcher

import "time"

// Clock is the batcher's source of time. Production code uses SystemClock;
// tests use batchertest.Clock to fire timers exactly when they decide.
type Clock interface {
	Now() time.Time
	// AfterFunc calls f in its own goroutine (or, for a fake clock, from
	// whoever advances it) once d has passed.
	AfterFunc(d time.Duration, f func()) Timer
}

// Timer is a pending AfterFunc call.
type Timer interface {
	// Stop prevents the call if it has not started yet and reports whether
	// it did. A false result means f has run or is about to: callers that
	// must ignore such a late call have to detect it themselves.
	Stop() bool
}

// SystemClock returns the real clock.
func SystemClock() Clock { return systemClock{} }

type systemClock struct{}

func (systemClock) Now() time.Time { return time.Now() }

func (systemClock) AfterFunc(d time.Duration, f func()) Timer { return time.AfterFunc(d, f) }
