package server

import (
	"fmt"
	"regexp"
	"strings"
	"unicode"
	"unicode/utf8"

	"connectrpc.com/connect"

	spoolv1 "github.com/spool-run/spool/gen/spool/v1"
	"github.com/spool-run/spool/internal/store"
)

// Bounds on what a request may carry. They keep one request from costing
// the server or the store more than a job runner ever needs.
const (
	maxQueueName        = 80
	maxRequestID        = 200
	maxArgs             = 4096
	maxParamBytes       = 256 << 10 // argv + script + env together
	maxReason           = 1000
	maxWaitSeconds      = 20
	maxVisibility       = 43200 // 12 h, SQS's own maximum
	maxEventsPerPublish = 1000
)

var queueName = regexp.MustCompile(`^[A-Za-z0-9._-]+$`)

func invalid(format string, args ...any) error {
	return connect.NewError(connect.CodeInvalidArgument, fmt.Errorf(format, args...))
}

// checkQueue returns the queue to use for name ("" means the default).
func checkQueue(name string) (string, error) {
	if name == "" {
		return store.DefaultQueue, nil
	}
	if len(name) > maxQueueName || !queueName.MatchString(name) {
		return "", invalid("queue %q: use 1-%d letters, digits, '.', '_' or '-'", name, maxQueueName)
	}
	return name, nil
}

// checkParams validates what a job runs.
func checkParams(p *spoolv1.JobParams) error {
	if p == nil {
		return invalid("params: say what to run (argv or script)")
	}
	hasArgv, hasScript := len(p.GetArgv()) > 0, p.GetScript() != ""
	switch {
	case hasArgv == hasScript:
		return invalid("params: set exactly one of argv (a program and its arguments) or script (run with /bin/sh -c)")
	case hasArgv && p.GetArgv()[0] == "":
		return invalid("params.argv[0]: the program to run is empty")
	case len(p.GetArgv()) > maxArgs:
		return invalid("params.argv: %d arguments; at most %d", len(p.GetArgv()), maxArgs)
	}
	size := len(p.GetScript()) + len(p.GetWorkingDir()) + len(p.GetRepositoryUrl()) + len(p.GetRef())
	for i, a := range p.GetArgv() {
		if strings.IndexByte(a, 0) >= 0 {
			return invalid("params.argv[%d] contains a NUL byte", i)
		}
		size += len(a)
	}
	if strings.IndexByte(p.GetScript(), 0) >= 0 {
		return invalid("params.script contains a NUL byte")
	}
	for k, v := range p.GetEnv() {
		if k == "" || strings.ContainsAny(k, "=\x00") || strings.IndexByte(v, 0) >= 0 {
			return invalid("params.env: %q is not a valid environment variable name (non-empty, no '=' or NUL)", k)
		}
		size += len(k) + len(v)
	}
	if size > maxParamBytes {
		return invalid("params: %d bytes of command, script and environment; at most %d", size, maxParamBytes)
	}
	if strings.IndexByte(p.GetWorkingDir(), 0) >= 0 {
		return invalid("params.working_dir contains a NUL byte")
	}
	if t := p.GetTimeout(); t != nil && (t.CheckValid() != nil || t.AsDuration() < 0) {
		return invalid("params.timeout must be a positive duration")
	}
	if p.GetRef() != "" && p.GetRepositoryUrl() == "" {
		return invalid("params.ref is set but params.repository_url is not")
	}
	if u := p.GetRepositoryUrl(); u != "" && (strings.HasPrefix(u, "-") || strings.ContainsFunc(u, unicode.IsSpace)) {
		return invalid("params.repository_url %q is not a repository address", u)
	}
	if r := p.GetRef(); strings.HasPrefix(r, "-") || strings.ContainsFunc(r, unicode.IsSpace) {
		return invalid("params.ref %q is not a branch, tag or commit", r)
	}
	return nil
}

// checkText bounds a free-text field and requires it to be printable UTF-8.
func checkText(field, s string, limit int) error {
	if len(s) > limit {
		return invalid("%s: %d bytes; at most %d", field, len(s), limit)
	}
	if !utf8.ValidString(s) || strings.ContainsFunc(s, func(r rune) bool { return !unicode.IsPrint(r) }) {
		return invalid("%s must be printable UTF-8", field)
	}
	return nil
}

// checkSeconds validates an optional seconds field against [lo, hi].
func checkSeconds(field string, v, def, lo, hi int32) (int32, error) {
	if v == 0 {
		return def, nil
	}
	if v < lo || v > hi {
		return 0, invalid("%s must be between %d and %d, got %d", field, lo, hi, v)
	}
	return v, nil
}

func checkStates(states []spoolv1.JobState) error {
	for _, s := range states {
		if _, known := spoolv1.JobState_name[int32(s)]; !known || s == spoolv1.JobState_JOB_STATE_UNSPECIFIED {
			return invalid("states: %d is not a job state", int32(s))
		}
	}
	return nil
}

func checkEventTypes(types []spoolv1.EventType) error {
	for _, t := range types {
		if _, known := spoolv1.EventType_name[int32(t)]; !known || t == spoolv1.EventType_EVENT_TYPE_UNSPECIFIED {
			return invalid("event_types: %d is not an event type", int32(t))
		}
	}
	return nil
}

func checkJobID(id string) error {
	if id == "" {
		return invalid("job_id is required")
	}
	return checkText("job_id", id, 100)
}
