package service

import (
	"testing"
	"time"
)

// Any cron expression and time zone is either refused with an error or
// read into a schedule whose ticks move forward.
func FuzzParseCron(f *testing.F) {
	for _, s := range []string{"@hourly", "@every 10s", "@every -1s", "*/5 * * * *", "0 3 * * 1-5", "* * * * * *", "0 0 30 2 *",
		"TZ=UTC * * * * *", "@every 0s", "1-60/0 * * * *", "0 0 L * *", "@yearly", "? ? ? ? ?", "60 * * * *", "*/0 * * * *"} {
		f.Add(s, "")
	}
	f.Add("0 3 * * *", "Europe/Berlin")
	f.Fuzz(func(t *testing.T, expr, tz string) {
		cs, loc, err := parseCron(expr, tz)
		if err != nil {
			return
		}
		from := time.Date(2026, 11, 28, 1, 0, 0, 0, loc)
		next := cs.Next(from)
		if next.IsZero() {
			return // a date that comes only in some years
		}
		if !next.After(from) || !cs.Next(next).After(next) && !cs.Next(next).IsZero() {
			t.Fatalf("%q in %q: ticks %v, then %v", expr, tz, next, cs.Next(next))
		}
	})
}
