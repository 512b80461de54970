package termview

import (
	"context"
	"time"

	"github.com/spool-run/spool/internal/backoff"
)

// MaxPause caps how long playback waits before one line: a job that was
// quiet for five minutes is replayed with a short pause and a note saying
// how long it really was.
const MaxPause = 2 * time.Second

// Pacer spaces lines out as they were written. Before each line it waits
// for the time that separated it from the previous line, scaled (1: as
// recorded, 2: twice as long, 0: no waiting) and capped at MaxPause, less
// the time that has already passed since the previous line was shown:
// receiving a batch takes time, and a job followed live has made the viewer
// wait for real. Lines without recorded times arrive spaced by the job's
// playback interval (events.Unpack gives them times that far apart), so the
// pacer sees one time per line either way.
type Pacer struct {
	// Now and Sleep are the pacer's clock: time.Now and a sleep that ends
	// with its context, unless a test or a caller wants to see them.
	Now   func() time.Time
	Sleep func(context.Context, time.Duration) error

	scale   float64
	maxWait time.Duration
	prev    time.Time // when the previous line was written
	shown   time.Time // when it was shown
}

// NewPacer paces lines at scale times their recorded gaps.
func NewPacer(scale float64) *Pacer {
	return &Pacer{scale: scale, maxWait: MaxPause, Now: time.Now, Sleep: backoff.Sleep}
}

// delay says how long to wait before showing a line written at at. skipped
// is the recorded gap when the cap shortened the wait, so the viewer can be
// told what they did not sit through.
func (p *Pacer) delay(at time.Time) (wait, skipped time.Duration) {
	if p.prev.IsZero() || p.scale == 0 || !at.After(p.prev) {
		return 0, 0
	}
	gap := at.Sub(p.prev)
	want := time.Duration(float64(gap) * p.scale)
	elapsed := p.Now().Sub(p.shown)
	if want > p.maxWait {
		if elapsed < want {
			skipped = gap
		}
		want = p.maxWait
	}
	return max(0, want-elapsed), skipped
}

// Wait sleeps until the line written at at is due and records it as shown.
// skipped is the recorded pause when the cap cut it short.
func (p *Pacer) Wait(ctx context.Context, at time.Time) (skipped time.Duration, err error) {
	wait, skipped := p.delay(at)
	if wait > 0 {
		if err := p.Sleep(ctx, wait); err != nil {
			return 0, err
		}
	}
	p.prev, p.shown = at, p.Now()
	return skipped, nil
}

// PauseText says how long a pause was, to the second once it is long.
func PauseText(d time.Duration) string {
	if d >= time.Minute {
		return d.Round(time.Second).String()
	}
	return d.Round(100 * time.Millisecond).String()
}
