package cli

import (
	"context"
	"time"

	"github.com/spool-run/spool/internal/backoff"
)

// maxPause caps how long monitor waits before one line: a job that was
// quiet for five minutes is replayed with a short pause and a note saying
// how long it really was.
const maxPause = 2 * time.Second

// pacer spaces lines out as they were written. Before each line it waits
// for the time that separated it from the previous line, scaled (1: as
// recorded, 2: twice as long, 0: no waiting) and capped at maxWait, less the
// time that has already passed since the previous line was shown: receiving
// a batch takes time, and a job followed live has made the viewer wait for
// real. Lines without recorded times arrive spaced by the job's playback
// interval (events.Unpack gives them times that far apart), so the pacer
// sees one time per line either way.
type pacer struct {
	scale   float64
	maxWait time.Duration
	now     func() time.Time
	sleep   func(context.Context, time.Duration) error

	prev  time.Time // when the previous line was written
	shown time.Time // when it was shown
}

func newPacer(scale float64) *pacer {
	return &pacer{scale: scale, maxWait: maxPause, now: time.Now, sleep: backoff.Sleep}
}

// delay says how long to wait before showing a line written at at. skipped
// is the recorded gap when the cap shortened the wait, so the viewer can be
// told what they did not sit through.
func (p *pacer) delay(at time.Time) (wait, skipped time.Duration) {
	if p.prev.IsZero() || p.scale == 0 || !at.After(p.prev) {
		return 0, 0
	}
	gap := at.Sub(p.prev)
	want := time.Duration(float64(gap) * p.scale)
	elapsed := p.now().Sub(p.shown)
	if want > p.maxWait {
		if elapsed < want {
			skipped = gap
		}
		want = p.maxWait
	}
	return max(0, want-elapsed), skipped
}

// wait sleeps until the line written at at is due and records it as shown.
func (p *pacer) wait(ctx context.Context, at time.Time) (skipped time.Duration, err error) {
	wait, skipped := p.delay(at)
	if wait > 0 {
		if err := p.sleep(ctx, wait); err != nil {
			return 0, err
		}
	}
	p.prev, p.shown = at, p.now()
	return skipped, nil
}

// pauseText says how long a pause was, to the second once it is long.
func pauseText(d time.Duration) string {
	if d >= time.Minute {
		return d.Round(time.Second).String()
	}
	return d.Round(100 * time.Millisecond).String()
}
