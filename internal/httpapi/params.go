package httpapi

import (
	"fmt"
	"math"
	"net/http"
	"net/url"
	"strconv"
	"time"
)

// intParam parses the optional integer query parameter name: def when it
// is absent, an error naming the parameter and saying what it takes (want)
// when it is not an integer in [lo, hi].
func intParam(q url.Values, name string, def, lo, hi int64, want string) (int64, error) {
	s, ok := q[name]
	if !ok || len(s) == 0 {
		return def, nil
	}
	if len(s) > 1 {
		return 0, badRequest("%s is given %d times; give it once", name, len(s))
	}
	v, err := strconv.ParseInt(s[0], 10, 64)
	if err != nil || v < lo || v > hi {
		return 0, badRequest("%s=%q: want %s", name, truncate(s[0], 40), want)
	}
	return v, nil
}

// timeParam parses the optional time query parameter name, in RFC 3339
// (2026-11-27T09:30:00Z, or with an offset and fractions of a second):
// zero when it is absent, an error naming the parameter and the format
// otherwise.
func timeParam(q url.Values, name string) (time.Time, error) {
	s, ok := q[name]
	if !ok || len(s) == 0 {
		return time.Time{}, nil
	}
	if len(s) > 1 {
		return time.Time{}, badRequest("%s is given %d times; give it once", name, len(s))
	}
	t, err := time.Parse(time.RFC3339Nano, s[0])
	// Years past 9999 have no RFC 3339 form to send back in a message.
	if err != nil || t.Year() > 9999 {
		return time.Time{}, badRequest("%s=%q: want a time in RFC 3339, like 2026-11-27T09:30:00Z or 2026-11-27T10:30:00.250+01:00 (encode + as %%2B)", name, truncate(s[0], 40))
	}
	return t, nil
}

// waitParam parses the optional query parameter name, how long a request
// may wait: a duration with its unit (2s, 500ms, 1m) or a number of
// seconds (2, 0.5); zero when it is absent. Like a page size, a wait
// longer than max counts as max rather than being refused: the client
// asks again.
func waitParam(q url.Values, name string, max time.Duration) (time.Duration, error) {
	s, err := stringParam(q, name)
	if err != nil || s == "" {
		return 0, err
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		var secs float64
		secs, err = strconv.ParseFloat(s, 64)
		// Past a day, the product could overflow; it is capped anyway.
		d = time.Duration(min(secs, 86400) * float64(time.Second))
		if math.IsNaN(secs) {
			err = strconv.ErrSyntax
		}
	}
	if err != nil || d < 0 {
		return 0, badRequest("%s=%q: want how long to wait for a line, like 2s, 500ms or 2 (seconds), from 0 up to %v (longer counts as %v)",
			name, truncate(s, 40), max, max)
	}
	return min(d, max), nil
}

// limitParam parses a page size: def when absent, at least 1, and capped
// at max rather than refused, so a client asking for "everything" gets the
// largest page and pages on.
func limitParam(q url.Values, def, max int64) (int, error) {
	v, err := intParam(q, "limit", def, 1, math.MaxInt64, fmt.Sprintf("a positive integer (default %d; larger than %d counts as %d)", def, max, max))
	return int(min(v, max)), err
}

// truncate shortens s for quoting in an error message.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// boolParam parses the optional query parameter name: true or false
// (absent: false).
func boolParam(r *http.Request, name string) (bool, error) {
	switch s, err := stringParam(r.URL.Query(), name); {
	case err != nil:
		return false, err
	case s == "" || s == "false":
		return false, nil
	case s == "true":
		return true, nil
	default:
		return false, badRequest("%s=%q: want true or false", name, truncate(s, 40))
	}
}
