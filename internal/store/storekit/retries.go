package storekit

import (
	"sync/atomic"

	"github.com/spool-run/spool/internal/store"
)

// Retries is where a backend that offers store.RetryReporter keeps its
// observer: set once by ReportRetries, read on every retry from whatever
// goroutine ran it. Its zero value tells no one.
type Retries struct {
	o atomic.Pointer[observer]
}

// observer boxes the interface so it fits an atomic pointer.
type observer struct{ store.RetryObserver }

// ReportRetries implements store.RetryReporter.
func (r *Retries) ReportRetries(o store.RetryObserver) {
	if o == nil {
		r.o.Store(nil)
		return
	}
	r.o.Store(&observer{o})
}

// Retried tells the observer, if any, that operation ran again for reason.
func (r *Retries) Retried(operation, reason string) {
	if o := r.o.Load(); o != nil {
		o.Retried(operation, reason)
	}
}

// Throttled tells the observer, if any, that operation was throttled.
func (r *Retries) Throttled(operation string) {
	if o := r.o.Load(); o != nil {
		o.Throttled(operation)
	}
}
