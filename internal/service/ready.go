package service

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/spool-run/spool"
	"github.com/spool-run/spool/internal/apierr"
)

// How readiness is checked: a ping bounded by readyTimeout, whose answer
// holds for readyFor. Probes of a load balancer and of Kubernetes (every
// few seconds each, from every node) then cost the store one ping a
// readyFor at most, and a store that hangs makes a probe wait readyTimeout,
// not the probe's own timeout.
const (
	readyTimeout = 2 * time.Second
	readyFor     = time.Second
)

// readiness is the last answer of Ready and when it was found.
type readiness struct {
	mu  sync.Mutex // held through a ping: probes arriving meanwhile wait for its answer
	at  time.Time
	err error
	// now is time.Now; tests move it on.
	now func() time.Time
}

// Ready says whether this server can serve calls: nil, or an error of kind
// spool.ErrUnavailable that names the store and what it answered. It asks
// the store (store.Pinger) at most once a second; a store without a ping
// (the memory store) is always ready. A server shutting down is not
// ready: it is ending its calls, and new ones should go elsewhere.
func (s *Service) Ready(ctx context.Context) error {
	if s.draining() {
		return apierr.Errorf(spool.ErrUnavailable, "the server is shutting down")
	}
	p := s.store.Capabilities().Pinger
	if p == nil {
		return nil
	}
	r := &s.ready
	r.mu.Lock()
	defer r.mu.Unlock()
	now := r.now
	if now == nil {
		now = time.Now
	}
	if !r.at.IsZero() && now().Sub(r.at) < readyFor {
		return r.err
	}
	// The probe's own context bounds the wait too: a probe that gave up
	// leaves the answer unknown, for the next probe to find.
	pctx, cancel := context.WithTimeout(ctx, readyTimeout)
	defer cancel()
	err := p.Ping(pctx)
	if err != nil && ctx.Err() != nil {
		return ctx.Err()
	}
	if err != nil {
		s.log.WarnContext(ctx, "not ready: the store does not answer", "store", s.cfg.Store.Type, "error", err)
		err = notReady{reason: fmt.Sprintf("the %s store does not answer", s.cfg.Store.Type),
			err: apierr.Errorf(spool.ErrUnavailable, "the %s store does not answer: %w", s.cfg.Store.Type, err)}
	}
	r.at, r.err = now(), err
	return err
}

// notReady is a failed ping: err says all (the driver's words, which may
// name the database's host and user: for the server's log), reason only
// which store does not answer (for anyone who asks, as a probe has no key).
type notReady struct {
	reason string
	err    error
}

func (e notReady) Error() string { return e.err.Error() }
func (e notReady) Unwrap() error { return e.err }

// ReadyReason is what may be said of Ready's err to a caller the server
// does not know: which store does not answer, or that the server is
// shutting down; never what the store's driver said.
func ReadyReason(err error) string {
	if nr, ok := errors.AsType[notReady](err); ok {
		return nr.reason
	}
	return err.Error()
}
