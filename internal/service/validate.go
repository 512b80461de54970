package service

import (
	"maps"
	"regexp"
	"slices"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/bmatcuk/doublestar/v4"

	"github.com/spool-run/spool"
	spoolv1 "github.com/spool-run/spool/gen/spool/v1"
	"github.com/spool-run/spool/internal/apierr"
	"github.com/spool-run/spool/internal/config"
	"github.com/spool-run/spool/internal/convert"
	"github.com/spool-run/spool/internal/mask"
	"github.com/spool-run/spool/internal/store"
)

// Bounds on what a request may carry. They keep one request from costing
// the server or the store more than a job runner ever needs.
const (
	maxQueueName        = 80
	maxRequestID        = 200
	maxArgs             = 4096
	maxParamBytes       = convert.MaxParamBytes // argv + script + env + stdin together
	maxReason           = 1000
	maxCursor           = 1000
	maxWorkerID         = 200
	maxResultError      = 16 << 10
	maxRetries          = 100
	maxKeptAt           = 1000
	maxWaitSeconds      = 20
	maxEventsPerPublish = 1000
)

// Bounds on a job's secrets. A secret shorter than minSecret would, masked
// in output, hide ordinary text (and masking "abc" reveals what is near it
// anyway); the total keeps the sealed secrets well within what every
// store holds beside a job's parameters.
const (
	maxSecrets      = 100
	minSecret       = mask.MinLen
	maxSecret       = 32 << 10
	maxSecretsBytes = 64 << 10 // names and values together
	maxSecretName   = 255
)

// How large a request's message may be, decompressed, by call: what each
// call can need, so a client cannot make the server read, decompress or
// decode more than that. The entrances enforce them before a message
// reaches the core.
const (
	// MaxPublishRequestBytes: a publish carries at most 8 MiB of events,
	// or one batch of at most config.MaxBatchBytesLimit of output and its
	// lines' metadata; twice the limit holds either.
	MaxPublishRequestBytes = 2 * config.MaxBatchBytesLimit
	// MaxEnqueueRequestBytes: the parameters are at most maxParamBytes and
	// the secrets maxSecretsBytes; twice that holds their encoding and the
	// other fields.
	MaxEnqueueRequestBytes = 2 * (maxParamBytes + maxSecretsBytes)
	// MaxRequestBytes is for every other call: ids, a task token, short
	// texts (the longest, a result's error, is maxResultError).
	MaxRequestBytes = 64 << 10
)

// The lease a worker may ask for: long enough for a heartbeat every second
// with one late, at most 12 hours (SQS's own maximum).
const (
	minLease = 2 * time.Second
	maxLease = 12 * time.Hour
)

var (
	queueName = regexp.MustCompile(`^[A-Za-z0-9._-]+$`)
	// envName is what a shell accepts as a variable's name.
	envName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
)

var invalid = apierr.Invalid

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

// checkParams validates what a job runs. A rejected job (never run) needs
// no command, but what it carries is held to the same bounds.
func checkParams(p *spoolv1.JobParams, rejected bool) error {
	if p == nil {
		if rejected {
			return nil
		}
		return invalid("params: say what to run (argv or script)")
	}
	if p.GetScatter() != nil {
		return invalid("params.scatter is set by spool on a scatter's own jobs; start a scatter with CreateScatter")
	}
	if p.GetExternal() != nil {
		return invalid("params.external is set by spool on the jobs that hold other programs' logs; send logs to /api/v1/ingest instead")
	}
	if err := checkStdinFields(p); err != nil {
		return err
	}
	hasArgv, hasScript := len(p.GetArgv()) > 0, p.GetScript() != ""
	switch {
	case hasArgv && hasScript, !rejected && !hasArgv && !hasScript:
		return invalid("params: set exactly one of argv (a program and its arguments) or script (run with /bin/sh -c)")
	case hasArgv && p.GetArgv()[0] == "":
		return invalid("params.argv[0]: the program to run is empty")
	case len(p.GetArgv()) > maxArgs:
		return invalid("params.argv: %d arguments; at most %d", len(p.GetArgv()), maxArgs)
	}
	for i, a := range p.GetArgv() {
		if strings.IndexByte(a, 0) >= 0 {
			return invalid("params.argv[%d] contains a NUL byte", i)
		}
	}
	if strings.IndexByte(p.GetScript(), 0) >= 0 {
		return invalid("params.script contains a NUL byte")
	}
	for k, v := range p.GetEnv() {
		if k == "" || strings.ContainsAny(k, "=\x00") {
			return invalid("params.env: %q is not a valid environment variable name (non-empty, no '=' or NUL)", k)
		}
		if strings.IndexByte(v, 0) >= 0 {
			return invalid("params.env: the value of %s contains a NUL byte, which no environment variable can hold", k)
		}
	}
	if size := convert.ParamBytes(p); size > maxParamBytes {
		return invalid("params: %d bytes of command, script, environment and stdin; at most %d (upload a larger stdin: params.stdin_upload)", size, maxParamBytes)
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
	return checkArtifactGlobs(p.GetArtifacts())
}

// Bounds of a job's artifact globs (params.artifacts).
const (
	maxArtifactGlobs     = 100
	maxArtifactGlobBytes = 1024
)

// checkArtifactGlobs refuses a glob the worker could not use: one that is
// malformed, absolute, or climbs out of the job's directory.
func checkArtifactGlobs(globs []string) error {
	if len(globs) > maxArtifactGlobs {
		return invalid("params.artifacts: %d globs; at most %d", len(globs), maxArtifactGlobs)
	}
	for i, g := range globs {
		switch {
		case g == "":
			return invalid("params.artifacts[%d] is empty: give a glob such as dist/** or report.html", i)
		case len(g) > maxArtifactGlobBytes:
			return invalid("params.artifacts[%d] is %d bytes; at most %d", i, len(g), maxArtifactGlobBytes)
		case strings.HasPrefix(g, "/") || strings.ContainsAny(g, "\x00\\"):
			return invalid("params.artifacts[%d] %q must be relative to the job's directory (no leading /, backslash or NUL)", i, truncate(g, 80))
		case slices.Contains(strings.Split(g, "/"), ".."):
			return invalid("params.artifacts[%d] %q climbs out of the job's directory with ..: artifacts are files under it", i, truncate(g, 80))
		case !doublestar.ValidatePattern(g):
			return invalid("params.artifacts[%d] %q is not a valid glob (check its brackets and braces)", i, truncate(g, 80))
		}
	}
	return nil
}

// checkSecrets validates a job's secrets against its environment. Errors
// name the secret, never its value.
func checkSecrets(secrets, env map[string]string) error {
	if len(secrets) > maxSecrets {
		return invalid("secrets: %d secrets; at most %d", len(secrets), maxSecrets)
	}
	size := 0
	for _, name := range slices.Sorted(maps.Keys(secrets)) {
		v := secrets[name]
		switch {
		case len(name) > maxSecretName || !envName.MatchString(name):
			return invalid("secrets: %q is not an environment variable name (letters, digits and '_', not starting with a digit, at most %d)",
				truncate(name, maxSecretName), maxSecretName)
		case hasKey(env, name):
			return invalid("secret %s is also in params.env: give it in one place (as a secret, if it is one)", name)
		case len(v) < minSecret:
			return invalid("secret %s is %d bytes; a secret must be at least %d bytes, so that masking it in output does not hide ordinary text", name, len(v), minSecret)
		case len(v) > maxSecret:
			return invalid("secret %s is %d bytes; at most %d", name, len(v), maxSecret)
		case strings.IndexByte(v, 0) >= 0:
			return invalid("secret %s contains a NUL byte, which no environment variable can hold", name)
		}
		if line, n := shortLine(v); line > 0 {
			return invalid("secret %s: line %d is %d bytes; each line of a secret of several lines is masked on its own, so it must be empty or at least %d bytes",
				name, line, n, minSecret)
		}
		size += len(name) + len(v)
	}
	if size > maxSecretsBytes {
		return invalid("secrets: %d bytes of names and values; at most %d", size, maxSecretsBytes)
	}
	return nil
}

func hasKey(m map[string]string, k string) bool {
	_, ok := m[k]
	return ok
}

// shortLine finds, in a value of several lines, the first line (from 1)
// that is not empty and shorter than a secret may be, and its length (a
// "\r" before its newline not counted, as masking does not count it); 0
// when there is none.
func shortLine(v string) (line, n int) {
	if !strings.Contains(v, "\n") {
		return 0, 0
	}
	for i, line := range strings.Split(v, "\n") {
		line = strings.TrimSuffix(line, "\r")
		if line != "" && len(line) < minSecret {
			return i + 1, len(line)
		}
	}
	return 0, 0
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
		if !slices.Contains(spool.States(), convert.State(s)) {
			return invalid("states: %d is not a job state; use %s", int32(s), strings.Join(stateNames(), ", "))
		}
	}
	return nil
}

func stateNames() []string {
	names := make([]string, len(spool.States()))
	for i, s := range spool.States() {
		names[i] = s.String()
	}
	return names
}

func checkEventTypes(types []spoolv1.EventType) error {
	for _, t := range types {
		if _, known := spoolv1.EventType_name[int32(t)]; !known || t == spoolv1.EventType_EVENT_TYPE_UNSPECIFIED {
			return invalid("event_types: %d is not an event type", int32(t))
		}
	}
	return nil
}

// maxJobID bounds a job id: longer ones are no job's.
const maxJobID = 100

// checkJobID refuses an empty id, and answers an id no job can have (too
// long, not printable) as not found without asking the store.
func checkJobID(id string) error {
	if id == "" {
		return invalid("job_id is required")
	}
	if checkText("job_id", id, maxJobID) != nil {
		return store.JobNotFound(truncate(id, maxJobID))
	}
	return nil
}

// truncate shortens s for quoting in an error message.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
