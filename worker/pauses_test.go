package worker

import (
	"errors"
	"testing"
	"time"

	"connectrpc.com/connect"
)

// A sender whose server is away tries again within a second however long
// the outage lasts; one told to slow down backs off to 15 s; a success
// starts both over.
func TestSenderPauses(t *testing.T) {
	t.Parallel()
	p := newPauses()
	away := connect.NewError(connect.CodeUnavailable, errors.New("connection refused"))
	for i := range 50 {
		if d := p.after(away); d > time.Second {
			t.Fatalf("pause %d while the server is away: %v, want at most 1s", i, d)
		}
	}
	slow := connect.NewError(connect.CodeResourceExhausted, errors.New("throttled"))
	var d time.Duration
	for range 10 {
		d = p.after(slow)
	}
	if d < 7500*time.Millisecond || d > 15*time.Second {
		t.Fatalf("pause after 10 throttled answers: %v, want within [7.5s, 15s]", d)
	}
	if d := p.after(errors.New("dial tcp: connection refused")); d > time.Second {
		t.Fatalf("a network error after throttling: %v, want at most 1s", d)
	}
	p.reset()
	if d := p.after(slow); d > time.Second {
		t.Fatalf("first throttled pause after a success: %v, want at most 1s", d)
	}
}
