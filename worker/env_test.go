package worker

import (
	"slices"
	"strings"
	"testing"

	spoolv1 "github.com/spool-run/spool/gen/spool/v1"
)

// TestTerminalJobsGetATerm: a job on a pseudo-terminal keeps the worker's
// TERM, gets one when the worker has none (or an empty one), and its own
// env has the last word; a job without a terminal gets no TERM it was not
// passed.
func TestTerminalJobsGetATerm(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		worker []string
		pty    bool
		own    map[string]string
		want   string // the TERM the command sees ("": none)
	}{
		{"worker's kept", []string{"TERM=screen"}, true, nil, "screen"},
		{"none on the worker", nil, true, nil, "xterm-256color"},
		{"empty on the worker", []string{"TERM="}, true, nil, "xterm-256color"},
		{"the job's own", nil, true, map[string]string{"TERM": "dumb"}, "dumb"},
		{"no terminal, none given", nil, false, nil, ""},
		{"no terminal, worker's passed", []string{"TERM=screen"}, false, nil, "screen"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			job := &spoolv1.Job{JobId: "j", Params: &spoolv1.JobParams{Script: "true", Pty: tc.pty, Env: tc.own}}
			env := jobEnv(tc.worker, nil, job)
			got := ""
			// The last value of a name is the one a command sees.
			for _, kv := range slices.Backward(env) {
				if v, ok := strings.CutPrefix(kv, "TERM="); ok {
					got = v
					break
				}
			}
			if got != tc.want {
				t.Fatalf("TERM %q, want %q (env %q)", got, tc.want, env)
			}
		})
	}
}

// TestDefaultPassEnvIsTheCallers: what DefaultPassEnv returns is a copy:
// changing it lets no more of the worker's environment through to jobs.
func TestDefaultPassEnvIsTheCallers(t *testing.T) {
	t.Parallel()
	names := DefaultPassEnv()
	if !slices.Contains(names, "PATH") || slices.Contains(names, "AWS_SECRET_ACCESS_KEY") {
		t.Fatalf("DefaultPassEnv() = %q", names)
	}
	names[0] = "AWS_SECRET_ACCESS_KEY"
	env := jobEnv([]string{"AWS_SECRET_ACCESS_KEY=s3cret", "PATH=/bin"}, nil, &spoolv1.Job{})
	if slices.Contains(env, "AWS_SECRET_ACCESS_KEY=s3cret") || !slices.Contains(env, "PATH=/bin") {
		t.Fatalf("a job's environment after changing DefaultPassEnv's slice: %q", env)
	}
	if again := DefaultPassEnv(); again[0] != "PATH" {
		t.Fatalf("DefaultPassEnv() after a caller changed its slice: %q", again)
	}
}
