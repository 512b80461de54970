package msgjobs

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/spool-run/spool/client"
)

// ErrNotASpec is wrapped by every error of ParseSpec: the message can
// never become a job as it is.
var ErrNotASpec = errors.New("not a job spec")

// spec is a job as a message describes it: the fields of `spool submit`.
type spec struct {
	Argv        []string          `json:"argv"`
	Shell       string            `json:"shell"`
	Env         map[string]string `json:"env"`
	Dir         string            `json:"dir"`
	Queue       string            `json:"queue"`
	Timeout     *duration         `json:"timeout"`
	MaxAttempts int32             `json:"max_attempts"`
	Retries     int32             `json:"retries"`
	Repo        string            `json:"repo"`
	Ref         string            `json:"ref"`
	Stdin       string            `json:"stdin"`
	// The job's own batching of its output (spool submit
	// --flush-interval, --batch-lines), within the server's bounds.
	FlushInterval *flushInterval `json:"flush_interval"`
	BatchLines    int            `json:"batch_lines"`
	// Secrets name the secrets of spool consume's own (its --secret
	// flags) that the job gets. A message carries no secret's value: a
	// topic is read by many, and a message that cannot become a job is
	// kept whole where it can be read.
	Secrets []string `json:"secrets"`
}

// duration is a timeout written as Go writes durations ("90s", "10m") or
// as a number of seconds.
type duration time.Duration

func (d *duration) UnmarshalJSON(b []byte) error {
	v, err := parseDuration("timeout", `"90s" or "10m"`, b)
	*d = duration(v)
	return err
}

// flushInterval is a flush interval, written as a timeout is.
type flushInterval time.Duration

func (d *flushInterval) UnmarshalJSON(b []byte) error {
	v, err := parseDuration("flush_interval", `"200ms" or "5s"`, b)
	*d = flushInterval(v)
	return err
}

// parseDuration reads field's value b: a duration as Go writes them, or a
// number of seconds. examples show the person what to write.
func parseDuration(field, examples string, b []byte) (time.Duration, error) {
	if len(b) > 0 && b[0] == '"' {
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return 0, err
		}
		v, err := time.ParseDuration(s)
		if err != nil {
			return 0, fmt.Errorf("%s %q: write a duration such as %s, or a number of seconds", field, s, examples)
		}
		return v, nil
	}
	f, err := strconv.ParseFloat(string(b), 64)
	if err != nil || f > float64(1<<62)/float64(time.Second) {
		return 0, fmt.Errorf("%s %s: write a duration such as %s, or a number of seconds", field, b, examples)
	}
	return time.Duration(f * float64(time.Second)), nil
}

// ParseSpec reads a job spec: one JSON object with argv (a program and its
// arguments) or shell (a script for /bin/sh -c), and optionally env, dir,
// queue, timeout ("90s" or seconds), max_attempts, retries, repo, ref,
// stdin, flush_interval (as timeout), batch_lines and secrets (the names of those of held, name to value, that the
// job gets). Unknown fields are refused, so a misspelt field is noticed
// instead of ignored. Errors wrap ErrNotASpec and say what is wrong.
func ParseSpec(value []byte, held map[string]string) (client.SubmitParams, error) {
	var s spec
	if !utf8.Valid(value) {
		return client.SubmitParams{}, fmt.Errorf("%w: the message is not UTF-8 text", ErrNotASpec)
	}
	dec := json.NewDecoder(bytes.NewReader(value))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&s); err != nil {
		return client.SubmitParams{}, fmt.Errorf("%w: %s", ErrNotASpec, describe(err))
	}
	if dec.More() {
		return client.SubmitParams{}, fmt.Errorf("%w: more than one JSON value; send one object per message", ErrNotASpec)
	}
	sub := client.SubmitParams{Queue: s.Queue, Argv: s.Argv, Script: s.Shell, Env: s.Env, WorkingDir: s.Dir,
		Repository: s.Repo, Ref: s.Ref, MaxAttempts: int(s.MaxAttempts), Retries: int(s.Retries)}
	if s.Stdin != "" {
		sub.Stdin = []byte(s.Stdin)
	}
	if s.Timeout != nil {
		sub.Timeout = time.Duration(*s.Timeout)
	}
	sub.Batching.MaxBatchSize = s.BatchLines
	if s.FlushInterval != nil {
		sub.Batching.FlushInterval = time.Duration(*s.FlushInterval)
	}
	for _, name := range s.Secrets {
		v, ok := held[name]
		if !ok {
			return sub, fmt.Errorf(`%w: "secrets" names %q, which is not a secret spool consume was given (--secret %s)`, ErrNotASpec, name, name)
		}
		if sub.Secrets == nil {
			sub.Secrets = map[string]string{}
		}
		sub.Secrets[name] = v
	}
	switch {
	case len(s.Argv) == 0 && s.Shell == "":
		return sub, fmt.Errorf(`%w: say what to run with "argv" (["make", "test"]) or "shell" ("make test && make lint")`, ErrNotASpec)
	case len(s.Argv) > 0 && s.Shell != "":
		return sub, fmt.Errorf(`%w: give either "argv" or "shell", not both`, ErrNotASpec)
	case sub.Timeout < 0:
		return sub, fmt.Errorf(`%w: "timeout" is negative`, ErrNotASpec)
	case s.MaxAttempts < 0 || s.Retries < 0:
		return sub, fmt.Errorf(`%w: "max_attempts" and "retries" must not be negative`, ErrNotASpec)
	case sub.Batching.FlushInterval < 0 || s.BatchLines < 0:
		return sub, fmt.Errorf(`%w: "flush_interval" and "batch_lines" must not be negative`, ErrNotASpec)
	}
	return sub, nil
}

// describe says what is wrong with a message that did not decode, in a
// sentence a person can act on.
func describe(err error) string {
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syn):
		return fmt.Sprintf("invalid JSON at byte %d: %s", syn.Offset, syn.Error())
	case errors.As(err, &typ):
		if typ.Field == "" {
			return "a job spec is a JSON object, not " + jsonKind(typ.Value)
		}
		return fmt.Sprintf("%q must be %s, not %s", typ.Field, jsonKind(typ.Type.Kind().String()), jsonKind(typ.Value))
	case errors.Is(err, io.EOF):
		return "the message is empty"
	case strings.HasPrefix(err.Error(), "json: unknown field "):
		return "unknown field " + strings.TrimPrefix(err.Error(), "json: unknown field ") +
			"; the fields are argv, shell, env, dir, queue, timeout, max_attempts, retries, repo, ref, stdin, flush_interval, batch_lines and secrets"
	}
	return strings.TrimPrefix(err.Error(), "json: ")
}

// jsonKind names a JSON or Go kind as a person writing JSON would.
func jsonKind(k string) string {
	switch k {
	case "slice":
		return "an array"
	case "map", "object", "struct":
		return "an object"
	case "int32", "number", "float64":
		return "a number"
	case "string":
		return "a string"
	case "bool":
		return "true or false"
	}
	return k
}
