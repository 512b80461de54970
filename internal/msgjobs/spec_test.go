package msgjobs_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/spool-run/spool/internal/msgjobs"
)

func TestParseSpec(t *testing.T) {
	sub, err := msgjobs.ParseSpec([]byte(`{"argv": ["make", "test"], "env": {"CI": "1"}, "dir": "/src", "queue": "builds",
		"timeout": "10m", "max_attempts": 2, "retries": 1, "repo": "https://example.com/r.git", "ref": "main", "stdin": "hello"}`), nil)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(sub.Argv, " ") != "make test" || sub.Env["CI"] != "1" || sub.WorkingDir != "/src" || sub.Queue != "builds" ||
		sub.Timeout != 10*time.Minute || sub.MaxAttempts != 2 || sub.Retries != 1 || sub.Repository == "" || sub.Ref != "main" ||
		string(sub.Stdin) != "hello" {
		t.Fatalf("spec read as %+v", sub)
	}
	sub, err = msgjobs.ParseSpec([]byte(`{"shell": "echo hi", "timeout": 90}`), nil)
	if err != nil || sub.Script != "echo hi" || sub.Timeout != 90*time.Second {
		t.Fatalf("shell spec read as %+v, %v", sub, err)
	}
	sub, err = msgjobs.ParseSpec([]byte(`{"shell": "seq 100", "flush_interval": "200ms", "batch_lines": 10}`), nil)
	if err != nil || sub.Batching.FlushInterval != 200*time.Millisecond || sub.Batching.MaxBatchSize != 10 {
		t.Fatalf("batching read as %+v, %v", sub.Batching, err)
	}
	sub, err = msgjobs.ParseSpec([]byte(`{"shell": "seq 100", "flush_interval": 0.5}`), nil)
	if err != nil || sub.Batching.FlushInterval != 500*time.Millisecond {
		t.Fatalf("flush_interval in seconds read as %+v, %v", sub.Batching, err)
	}
}

// TestParseSpecSecrets: a spec names which of spool consume's secrets its
// job gets, and gets their values; the others stay out of it.
func TestParseSpecSecrets(t *testing.T) {
	held := map[string]string{"DEPLOY_TOKEN": "value-1", "OTHER": "value-2"}
	sub, err := msgjobs.ParseSpec([]byte(`{"shell": "./deploy.sh", "secrets": ["DEPLOY_TOKEN"]}`), held)
	if err != nil {
		t.Fatal(err)
	}
	if len(sub.Secrets) != 1 || sub.Secrets["DEPLOY_TOKEN"] != "value-1" {
		t.Fatalf("secrets read as %v, want DEPLOY_TOKEN alone", sub.Secrets)
	}
}

func TestParseSpecRefusesWithAReason(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{``, "empty"},
		{`not json`, "invalid JSON"},
		{`[1]`, "a JSON object"},
		{`{"argv": "make"}`, `"argv" must be an array`},
		{`{"argz": ["make"]}`, `unknown field "argz"`},
		{`{}`, `say what to run`},
		{`{"argv": ["a"], "shell": "b"}`, "not both"},
		{`{"shell": "a", "timeout": "soon"}`, "write a duration"},
		{`{"shell": "a", "timeout": -1}`, "negative"},
		{`{"shell": "a", "retries": -1}`, "negative"},
		{`{"shell": "a", "flush_interval": "often"}`, `flush_interval "often": write a duration such as "200ms"`},
		{`{"shell": "a", "flush_interval": "-1s"}`, `"flush_interval" and "batch_lines" must not be negative`},
		{`{"shell": "a", "batch_lines": -3}`, `"flush_interval" and "batch_lines" must not be negative`},
		{`{"shell": "a"} {"shell": "b"}`, "more than one JSON value"},
		{"{\"shell\": \"\xff\"}", "not UTF-8"},
		{`{"shell": "a", "secrets": ["NOT_HELD"]}`, `"NOT_HELD", which is not a secret spool consume was given`},
		{`{"shell": "a", "secrets": {"TOKEN": "value"}}`, `"secrets" must be an array`},
	} {
		_, err := msgjobs.ParseSpec([]byte(tc.in), nil)
		if !errors.Is(err, msgjobs.ErrNotASpec) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("ParseSpec(%q) = %v, want an ErrNotASpec saying %q", tc.in, err, tc.want)
		}
	}
}

// FuzzParseSpec: whatever a message holds, the parser answers without
// panicking, and what it accepts is a job with exactly one command.
func FuzzParseSpec(f *testing.F) {
	for _, s := range []string{`{"argv": ["true"]}`, `{"shell": "echo", "timeout": "1s", "env": {"A": "b"}}`, `{"shell": "x", "timeout": 1e300}`, `{"shell": "x", "flush_interval": "200ms", "batch_lines": 10}`, `[]`, `null`, `{"argv": []}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		sub, err := msgjobs.ParseSpec(b, nil)
		if err != nil {
			if !errors.Is(err, msgjobs.ErrNotASpec) {
				t.Fatalf("error %v does not wrap ErrNotASpec", err)
			}
			return
		}
		if (len(sub.Argv) > 0) == (sub.Script != "") {
			t.Fatalf("accepted a spec with argv %q and script %q", sub.Argv, sub.Script)
		}
		if sub.Timeout < 0 {
			t.Fatalf("accepted a negative timeout %s", sub.Timeout)
		}
		if sub.Batching.FlushInterval < 0 || sub.Batching.MaxBatchSize < 0 {
			t.Fatalf("accepted a negative batching %+v", sub.Batching)
		}
	})
}
