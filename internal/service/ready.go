package service

import (
	"context"
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
		err = apierr.Errorf(spool.ErrUnavailable, "the %s store does not answer: %w", s.cfg.Store.Type, err)
	}
	r.at, r.err = now(), err
	return err
}
