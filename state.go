package spool

import (
	"fmt"
	"strings"

	spoolv1 "github.com/spool-run/spool/gen/spool/v1"
)

// States lists the job states in the order of a job's life: queued and
// running are live, the other three final.
var States = []spoolv1.JobState{
	spoolv1.JobState_JOB_STATE_QUEUED,
	spoolv1.JobState_JOB_STATE_RUNNING,
	spoolv1.JobState_JOB_STATE_SUCCEEDED,
	spoolv1.JobState_JOB_STATE_FAILED,
	spoolv1.JobState_JOB_STATE_CANCELLED,
}

// IsFinal reports whether a job in state s is finished for good: it is
// never handed to a worker again and its log grows no more.
func IsFinal(s spoolv1.JobState) bool {
	switch s {
	case spoolv1.JobState_JOB_STATE_SUCCEEDED, spoolv1.JobState_JOB_STATE_FAILED, spoolv1.JobState_JOB_STATE_CANCELLED:
		return true
	}
	return false
}

// StateName is a state's short lower-case name ("running"), the one the
// command line, the REST API and the logs use.
func StateName(s spoolv1.JobState) string {
	switch s {
	case spoolv1.JobState_JOB_STATE_QUEUED:
		return "queued"
	case spoolv1.JobState_JOB_STATE_RUNNING:
		return "running"
	case spoolv1.JobState_JOB_STATE_SUCCEEDED:
		return "succeeded"
	case spoolv1.JobState_JOB_STATE_FAILED:
		return "failed"
	case spoolv1.JobState_JOB_STATE_CANCELLED:
		return "cancelled"
	}
	return "unspecified"
}

// ParseState is the state named name: its short name ("running", any case)
// or its wire name ("JOB_STATE_RUNNING"). Anything else is an error that
// wraps ErrInvalidArgument and lists the names.
func ParseState(name string) (spoolv1.JobState, error) {
	n := strings.ToLower(strings.TrimSpace(name))
	n = strings.TrimPrefix(n, "job_state_")
	for _, s := range States {
		if StateName(s) == n {
			return s, nil
		}
	}
	return spoolv1.JobState_JOB_STATE_UNSPECIFIED, fmt.Errorf("%w: %q is not a job state; use %s", ErrInvalidArgument, truncate(name, 40), stateList())
}

// ParseStates parses a list of state names, each of which may itself be a
// comma-separated list ("queued,running"), as flags and query strings
// carry them.
func ParseStates(names ...string) ([]spoolv1.JobState, error) {
	var out []spoolv1.JobState
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

func stateList() string {
	names := make([]string, len(States))
	for i, s := range States {
		names[i] = StateName(s)
	}
	return strings.Join(names, ", ")
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
