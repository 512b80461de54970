package cli

import (
	"testing"
	"time"
)

// TestParsePointInTime: durations count back from now; times with a zone
// are themselves, those without are local; anything else is refused with
// what the flag takes.
func TestParsePointInTime(t *testing.T) {
	now := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	paris := time.FixedZone("CET", 3600)
	for _, c := range []struct {
		in   string
		want time.Time
	}{
		{"10m", now.Add(-10 * time.Minute)},
		{"1h30m", now.Add(-90 * time.Minute)},
		{"90s", now.Add(-90 * time.Second)},
		{"0s", now},
		{"2d", now.Add(-48 * time.Hour)},
		{" 5m ", now.Add(-5 * time.Minute)},
		{"2026-11-27T09:30:00Z", time.Date(2026, 11, 27, 9, 30, 0, 0, time.UTC)},
		{"2026-11-27T09:30:00.250+02:00", time.Date(2026, 11, 27, 7, 30, 0, 250e6, time.UTC)},
		{"2026-11-27T09:30", time.Date(2026, 11, 27, 9, 30, 0, 0, paris)},
		{"2026-11-27 09:30:15", time.Date(2026, 11, 27, 9, 30, 15, 0, paris)},
		{"2026-11-27", time.Date(2026, 11, 27, 0, 0, 0, 0, paris)},
	} {
		got, err := parsePointInTime(c.in, now, paris)
		if err != nil || !got.Equal(c.want) {
			t.Errorf("%q: %v, %v; want %v", c.in, got, err, c.want)
		}
	}
	for _, bad := range []string{"", "-5m", "yesterday", "10", "2026-13-01", "5x", "99999d", "1e9h", "27/11/2026"} {
		if _, err := parsePointInTime(bad, now, paris); err != errPointInTime {
			t.Errorf("%q: %v, want the flag's help", bad, err)
		}
	}
}

// FuzzParsePointInTime: whatever is typed, the parser answers without
// panicking, and a duration it accepts never lands after now.
func FuzzParsePointInTime(f *testing.F) {
	for _, s := range []string{"10m", "2d", "1h30m", "2026-11-27T09:30:00Z", "2026-11-27", "2026-11-27 09:30", "-1s", "9223372036854775807ns", "99999d", "0d"} {
		f.Add(s)
	}
	now := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	f.Fuzz(func(t *testing.T, s string) {
		got, err := parsePointInTime(s, now, time.UTC)
		if err != nil {
			return
		}
		if _, ok := durationAgo(s); ok && got.After(now) {
			t.Fatalf("%q is a duration before now, but reads as %v, after %v", s, got, now)
		}
	})
}
