package cli

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// timeFlag is a point in time given as a duration before now ("10m",
// "1h30m", "2d") or as a time ("2026-11-27T09:30:00Z"; without a zone,
// "2026-11-27T09:30" or a bare date, it is the local time): people ask
// for "the last ten minutes" as often as for "since the deploy at 9:30".
type timeFlag struct {
	t   *time.Time
	now func() time.Time
}

func (f timeFlag) String() string {
	if f.t == nil || f.t.IsZero() {
		return ""
	}
	return f.t.Format(time.RFC3339Nano)
}

func (f timeFlag) Set(s string) error {
	t, err := parsePointInTime(s, f.now(), time.Local)
	if err != nil {
		return err
	}
	*f.t = t
	return nil
}

func (f timeFlag) Type() string { return "time" }

// errPointInTime says what a time flag takes.
var errPointInTime = errors.New("want a duration before now (90s, 10m, 1h30m, 2d), a time (2026-11-27T09:30:00Z, or 2026-11-27T09:30 in local time) or a date (2026-11-27)")

// localLayouts are the forms of a time without a zone, read in loc.
var localLayouts = []string{"2006-01-02T15:04:05.999999999", "2006-01-02T15:04:05", "2006-01-02T15:04", "2006-01-02 15:04:05", "2006-01-02 15:04", "2006-01-02"}

// parsePointInTime reads what a time flag takes: a duration before now, an
// RFC 3339 time, or a time or date without a zone, in loc.
func parsePointInTime(s string, now time.Time, loc *time.Location) (time.Time, error) {
	s = strings.TrimSpace(s)
	if d, ok := durationAgo(s); ok {
		return now.Add(-d), nil
	}
	if t, err := parseTime(s, loc); err == nil {
		return t, nil
	}
	return time.Time{}, errPointInTime
}

// parseTime reads an RFC 3339 time, or a time or date without a zone, in
// loc.
func parseTime(s string, loc *time.Location) (time.Time, error) {
	s = strings.TrimSpace(s)
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return t, nil
	}
	for _, layout := range localLayouts {
		if t, err := time.ParseInLocation(layout, s, loc); err == nil {
			return t, nil
		}
	}
	return time.Time{}, fmt.Errorf("%q is not a time", s)
}

// maxAgo bounds a duration before now, far past any log, so that the time
// it names cannot overflow.
const maxAgo = 100 * 365 * 24 * time.Hour

// durationAgo reads a duration that is not negative: Go's form (90s,
// 1h30m) or a whole number of days (2d).
func durationAgo(s string) (time.Duration, bool) {
	if days, ok := strings.CutSuffix(s, "d"); ok {
		n, err := strconv.ParseUint(days, 10, 16)
		if err != nil || time.Duration(n)*24*time.Hour > maxAgo {
			return 0, false
		}
		return time.Duration(n) * 24 * time.Hour, true
	}
	d, err := time.ParseDuration(s)
	if err != nil || d < 0 || d > maxAgo {
		return 0, false
	}
	return d, true
}
