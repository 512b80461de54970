package cli

import (
	"fmt"
	"strconv"
	"time"
)

// secondsOrDuration is a duration flag that also takes a bare number of
// seconds ("120" is 2m), so a flag that once took seconds keeps working.
type secondsOrDuration struct{ d *time.Duration }

func (f secondsOrDuration) String() string {
	if f.d == nil || *f.d == 0 {
		return "0s"
	}
	return f.d.String()
}

func (f secondsOrDuration) Set(s string) error {
	if n, err := strconv.ParseFloat(s, 64); err == nil {
		*f.d = time.Duration(n * float64(time.Second))
		return nil
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return fmt.Errorf("want a duration such as 90s or 2m, or a number of seconds")
	}
	*f.d = d
	return nil
}

func (f secondsOrDuration) Type() string { return "duration" }
