package cli

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/spool-run/spool"
	"github.com/spool-run/spool/client"
)

// jobExtraFlags are what a job may ask beyond what it runs: its priority
// and the URLs told of its end. spool submit and spool schedules create
// share them.
type jobExtraFlags struct {
	priority int
	notify   []string
}

func (f *jobExtraFlags) register(cmd *cobra.Command) {
	cmd.Flags().IntVar(&f.priority, "priority", 0, "1 (first) to 4: workers take a queue's highest priority first (default 2)")
	cmd.Flags().StringArrayVar(&f.notify, "notify", nil, "POST a signed JSON document to this http(s) URL when the job ends (repeatable, at most 5)")
}

// apply puts the flags into s.
func (f *jobExtraFlags) apply(s *client.SubmitParams) error {
	if f.priority != 0 && (f.priority < 1 || f.priority > 4) {
		return fmt.Errorf("--priority %d: give 1 (first) to 4 (last); 2 is the default", f.priority)
	}
	s.Priority, s.Notify = f.priority, f.notify
	return nil
}

// whenFlags say when a submitted job is queued: at a time, after a delay,
// or after other jobs succeeded.
type whenFlags struct {
	at    string
	in    time.Duration
	after []string
}

func (f *whenFlags) register(cmd *cobra.Command) {
	fl := cmd.Flags()
	fl.StringVar(&f.at, "at", "", "queue the job at this time, RFC 3339 (2026-11-28T09:30:00Z, 2026-11-28T09:30:00+01:00) or local (2026-11-28T09:30); a time past is now")
	fl.DurationVar(&f.in, "in", 0, "queue the job after this delay (90s, 10m, 2h)")
	fl.StringSliceVar(&f.after, "after", nil, "queue the job once these jobs succeeded (JOB[,JOB...], repeatable); it is cancelled if one fails or is cancelled")
}

// apply puts the flags into s. A time already past is kept (the server
// queues the job at once) and told on warn.
func (f *whenFlags) apply(s *client.SubmitParams, now time.Time, warn func(string)) error {
	switch {
	case f.at != "" && f.in != 0:
		return errors.New("give --at or --in, not both: --at is a time, --in a delay from now")
	case f.in < 0:
		return fmt.Errorf("--in %s is negative: give how long from now (10m, 2h)", f.in)
	}
	if f.at != "" {
		t, err := parseTime(f.at, time.Local)
		if err != nil {
			return fmt.Errorf("--at %q: want a time in RFC 3339, such as 2026-11-28T09:30:00Z or 2026-11-28T09:30:00+01:00 (or 2026-11-28T09:30 in local time)", f.at)
		}
		if !t.After(now) {
			warn(fmt.Sprintf("--at %s is past: the job is queued now", f.at))
		}
		s.RunAt = t
	}
	s.RunIn = f.in
	for _, id := range f.after {
		if id = strings.TrimSpace(id); id != "" {
			s.After = append(s.After, id)
		}
	}
	return nil
}

// waitsFor says what a scheduled job waits for, for people: "until 09:30:00
// (in 1h0m0s)", "for jobs A and B to succeed", or both.
func waitsFor(j *spool.Job, now time.Time) string {
	var parts []string
	if t := j.RunAfter; !t.IsZero() && t.After(now) {
		parts = append(parts, fmt.Sprintf("until %s (%s)", when(t, now), in(t.Sub(now))))
	}
	if len(j.After) > 0 {
		word := "job"
		if len(j.After) > 1 {
			word = "jobs"
		}
		parts = append(parts, fmt.Sprintf("for %s %s to succeed", word, listOf(j.After, "and")))
	}
	if len(parts) == 0 {
		return "to be queued"
	}
	return strings.Join(parts, ", then ")
}

// when is t as a person reads it: the time of day today, the date and
// time otherwise.
func when(t, now time.Time) string {
	t, now = t.Local(), now.Local()
	if y, m, d := t.Date(); y == now.Year() && m == now.Month() && d == now.Day() {
		return t.Format(time.TimeOnly)
	}
	return t.Format(time.DateTime)
}
