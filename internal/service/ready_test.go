package service

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/spool-run/spool"
	"github.com/spool-run/spool/internal/config"
	"github.com/spool-run/spool/internal/store"
	"github.com/spool-run/spool/internal/store/backends/memstore"
)

// pinged is a memory store that answers pings as told, and counts them.
type pinged struct {
	*memstore.Store
	fail  atomic.Pointer[error]
	pings atomic.Int32
}

func (p *pinged) Capabilities() store.Capabilities {
	c := p.Store.Capabilities()
	c.Pinger = p
	return c
}

func (p *pinged) Ping(context.Context) error {
	p.pings.Add(1)
	if err := p.fail.Load(); err != nil {
		return *err
	}
	return nil
}

// TestReady: the core is ready while its store answers its ping, and
// says which store does not answer, and why, while it does not; one ping
// answers every probe for a second; a server shutting down is not ready.
func TestReady(t *testing.T) {
	st := &pinged{Store: memstore.New()}
	cfg := config.Default()
	cfg.Store.Type = "postgres"
	s := newCore(t, st, cfg, make([]byte, 32))
	now := time.Unix(1_700_000_000, 0)
	s.ready.now = func() time.Time { return now }
	ctx := context.Background()

	if err := s.Ready(ctx); err != nil {
		t.Fatalf("a store that answers: %v", err)
	}
	down := errors.New("dial tcp 127.0.0.1:5432: connect: connection refused")
	st.fail.Store(&down)
	if err := s.Ready(ctx); err != nil {
		t.Fatalf("within a second of the last ping, the answer is that ping's: %v", err)
	}
	if n := st.pings.Load(); n != 1 {
		t.Fatalf("two probes within a second pinged the store %d times, want 1", n)
	}

	now = now.Add(readyFor)
	err := s.Ready(ctx)
	if !errors.Is(err, spool.ErrUnavailable) || !strings.Contains(err.Error(), "the postgres store does not answer") || !strings.Contains(err.Error(), "connection refused") {
		t.Fatalf("a store that does not answer: %v; want ErrUnavailable naming the store and its error", err)
	}

	st.fail.Store(nil)
	now = now.Add(readyFor)
	if err := s.Ready(ctx); err != nil {
		t.Fatalf("the store answers again: %v", err)
	}

	s.Drain()
	if err := s.Ready(ctx); !errors.Is(err, spool.ErrUnavailable) || !strings.Contains(err.Error(), "shutting down") {
		t.Fatalf("a draining server: %v; want ErrUnavailable saying it is shutting down", err)
	}
}

// TestReadyWithoutPing: a store that has no ping (the memory store) is
// ready.
func TestReadyWithoutPing(t *testing.T) {
	s := newCore(t, memstore.New(), config.Default(), make([]byte, 32))
	if err := s.Ready(context.Background()); err != nil {
		t.Fatal(err)
	}
}
