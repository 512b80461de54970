package termview

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/spool-run/spool/internal/events"
)

// fakeClock is a pacer's clock and sleep: sleeping moves the clock on and
// is recorded; advance is time passing outside the pacer (receiving, or a
// live job being slow).
type fakeClock struct {
	now    time.Time
	sleeps []time.Duration
}

func (c *fakeClock) pacer(scale float64) *Pacer {
	p := NewPacer(scale)
	p.Now = func() time.Time { return c.now }
	p.Sleep = func(_ context.Context, d time.Duration) error {
		c.sleeps = append(c.sleeps, d)
		c.now = c.now.Add(d)
		return nil
	}
	return p
}

var t0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

// play runs lines written at t0+offsets through a pacer and returns its
// sleeps and the pauses it reported as cut short.
func play(t *testing.T, scale float64, offsets ...time.Duration) (sleeps, skipped []time.Duration) {
	t.Helper()
	c := &fakeClock{now: time.Now()}
	p := c.pacer(scale)
	for _, off := range offsets {
		s, err := p.Wait(context.Background(), t0.Add(off))
		if err != nil {
			t.Fatal(err)
		}
		skipped = append(skipped, s)
	}
	return c.sleeps, skipped
}

func TestPacer(t *testing.T) {
	ms := time.Millisecond
	offsets := []time.Duration{0, 100 * ms, 400 * ms, 1400 * ms, 1400 * ms}
	cases := []struct {
		name        string
		scale       float64
		offsets     []time.Duration
		wantSleeps  []time.Duration
		wantSkipped []time.Duration
	}{
		{"as recorded", 1, offsets, []time.Duration{100 * ms, 300 * ms, time.Second}, []time.Duration{0, 0, 0, 0, 0}},
		{"--slow", 2, offsets, []time.Duration{200 * ms, 600 * ms, 2 * time.Second}, []time.Duration{0, 0, 0, 0, 0}},
		{"--fast", 0, offsets, nil, []time.Duration{0, 0, 0, 0, 0}},
		{"long gap capped", 1, []time.Duration{0, 5*time.Minute + 12*time.Second, 5*time.Minute + 12500*ms},
			[]time.Duration{2 * time.Second, 500 * ms}, []time.Duration{0, 5*time.Minute + 12*time.Second, 0}},
		{"--slow capped", 2, []time.Duration{0, 1500 * ms}, []time.Duration{2 * time.Second}, []time.Duration{0, 1500 * ms}},
		{"out of order times", 1, []time.Duration{time.Second, 0, 200 * ms}, []time.Duration{200 * ms}, []time.Duration{0, 0, 0}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			sleeps, skipped := play(t, tc.scale, tc.offsets...)
			if !slices.Equal(sleeps, tc.wantSleeps) || !slices.Equal(skipped, tc.wantSkipped) {
				t.Fatalf("sleeps %v skipped %v, want %v %v", sleeps, skipped, tc.wantSleeps, tc.wantSkipped)
			}
		})
	}
}

// TestPacerLive: time already spent waiting for a line counts against its
// pause, so a job followed live is shown as lines arrive, with no extra
// delay and no "paused" note for a pause the viewer sat through.
func TestPacerLive(t *testing.T) {
	c := &fakeClock{now: time.Now()}
	p := c.pacer(1)
	steps := []struct {
		written, arrived time.Duration // after the previous line
		wantSleep        time.Duration
		wantSkipped      time.Duration
	}{
		{0, 0, 0, 0},
		{time.Second, 300 * time.Millisecond, 700 * time.Millisecond, 0}, // the batch took 300ms to arrive
		{time.Second, 2 * time.Second, 0, 0},                             // arrived late: shown at once
		{10 * time.Minute, 10 * time.Minute, 0, 0},                       // a quiet spell, lived through
		{10 * time.Minute, time.Second, time.Second, 10 * time.Minute},   // a quiet spell, replayed
	}
	at := t0
	for i, s := range steps {
		at = at.Add(s.written)
		c.now = c.now.Add(s.arrived)
		c.sleeps = nil
		skipped, err := p.Wait(context.Background(), at)
		if err != nil {
			t.Fatal(err)
		}
		var slept time.Duration
		for _, d := range c.sleeps {
			slept += d
		}
		if slept != s.wantSleep || skipped != s.wantSkipped {
			t.Fatalf("line %d: slept %v skipped %v, want %v %v", i, slept, skipped, s.wantSleep, s.wantSkipped)
		}
	}
}

// TestPacerWithoutTimestamps: lines of a batch that recorded no times are
// spaced by its playback_interval_millis.
func TestPacerWithoutTimestamps(t *testing.T) {
	ev := events.Batch{Sequence: 1, FirstLine: 1, PlaybackIntervalMillis: 80, Lines: events.TextLines(t0, "x", "x", "x"), Untimed: true}.Event()
	c := &fakeClock{now: time.Now()}
	p := c.pacer(1)
	for _, line := range events.Unpack(ev) {
		if _, err := p.Wait(context.Background(), line.GetTimestamp().AsTime()); err != nil {
			t.Fatal(err)
		}
	}
	if want := []time.Duration{80 * time.Millisecond, 80 * time.Millisecond}; !slices.Equal(c.sleeps, want) {
		t.Fatalf("sleeps %v, want %v", c.sleeps, want)
	}
}

func TestPacerStopsWithContext(t *testing.T) {
	p := NewPacer(1)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := p.Wait(ctx, t0); err != nil {
		t.Fatalf("the first line waits for nothing: %v", err)
	}
	if _, err := p.Wait(ctx, t0.Add(time.Hour)); err == nil {
		t.Fatal("a cancelled wait returned no error")
	}
}

func TestPauseText(t *testing.T) {
	for d, want := range map[time.Duration]string{
		5*time.Minute + 12*time.Second + 400*time.Millisecond: "5m12s",
		3*time.Second + 520*time.Millisecond:                  "3.5s",
		2*time.Hour + 3*time.Second:                           "2h0m3s",
	} {
		if got := PauseText(d); got != want {
			t.Errorf("PauseText(%v) = %q, want %q", d, got, want)
		}
	}
}
