package spool

import (
	"fmt"
	"strings"
)

// State is where a job is in its life. Scheduled, Queued and Running are
// live; the other three are final. The zero State is no state at all
// ("unspecified").
type State uint8

// The job states. Their values are the wire's, which added Scheduled
// last; States lists them in the order of a job's life.
const (
	// Queued: waiting for a worker to lease it (also after a lost lease).
	Queued State = iota + 1
	// Running: leased by a worker, which keeps the lease alive with
	// heartbeats.
	Running
	// Succeeded: the command exited with status 0.
	Succeeded
	// Failed: the command exited non-zero, could not start, timed out, or
	// every attempt lost its lease. The job's result says which.
	Failed
	// Cancelled: cancelled before or while it ran, or because a job it
	// runs after (Job.After) failed or was cancelled.
	Cancelled
	// Scheduled: waiting for its time (Job.RunAfter: a delayed job, or a
	// retry's backoff) or for the jobs it runs after (Job.After) to
	// succeed. No worker is handed it; it becomes Queued once both are
	// done.
	Scheduled
)

var stateNames = [...]string{"unspecified", "queued", "running", "succeeded", "failed", "cancelled", "scheduled"}

// States returns the job states in the order of a job's life: scheduled,
// queued and running are live, the other three final. The slice is the
// caller's.
func States() []State { return []State{Scheduled, Queued, Running, Succeeded, Failed, Cancelled} }

// String is the state's short lower-case name ("running"), the one the
// command line, the REST API and the logs use.
func (s State) String() string {
	if int(s) < len(stateNames) {
		return stateNames[s]
	}
	return fmt.Sprintf("State(%d)", uint8(s))
}

// IsFinal reports whether a job in state s is finished for good: it is
// never handed to a worker again and its log grows no more.
func (s State) IsFinal() bool { return s == Succeeded || s == Failed || s == Cancelled }

// MarshalText is the state's name, so that JSON and other text formats
// carry "running" rather than a number.
func (s State) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// UnmarshalText reads a state's name as ParseState does.
func (s *State) UnmarshalText(b []byte) error {
	v, err := ParseState(string(b))
	if err != nil {
		return err
	}
	*s = v
	return nil
}

// ParseState is the state named name: its short name ("running", any case)
// or its wire name ("JOB_STATE_RUNNING"). Anything else is an error that
// wraps ErrInvalidArgument and lists the names.
func ParseState(name string) (State, error) {
	n := strings.ToLower(strings.TrimSpace(name))
	n = strings.TrimPrefix(n, "job_state_")
	for _, s := range States() {
		if s.String() == n {
			return s, nil
		}
	}
	return 0, fmt.Errorf("%w: %q is not a job state; use %s", ErrInvalidArgument, truncate(name, 40), names(States()))
}

// ParseStates parses a list of state names, each of which may itself be a
// comma-separated list ("queued,running"), as flags and query strings
// carry them.
func ParseStates(names ...string) ([]State, error) {
	var out []State
	for _, v := range names {
		for name := range strings.SplitSeq(v, ",") {
			s, err := ParseState(name)
			if err != nil {
				return nil, err
			}
			out = append(out, s)
		}
	}
	return out, nil
}

// names joins the names of values, for errors that list the choices.
func names[T fmt.Stringer](values []T) string {
	out := make([]string, len(values))
	for i, v := range values {
		out[i] = v.String()
	}
	return strings.Join(out, ", ")
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
