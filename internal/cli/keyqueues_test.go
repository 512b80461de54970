package cli

import (
	"strings"
	"testing"

	"github.com/spool-run/spool/spooltest"
)

// TestQueueLimitedKeys: submit and read keys limited to a queue submit,
// cancel, list and read only its jobs; each refusal says which queue to
// name instead, and a job of another queue is not found.
func TestQueueLimitedKeys(t *testing.T) {
	t.Parallel()
	srv := spooltest.NewServer(t)
	mk := func(role string) string {
		t.Helper()
		r := run(srv, "keys", "create", "--role", role, "--queue", "builds", "--name", role+"-builds")
		if r.code != 0 {
			t.Fatalf("keys create --role %s --queue builds: exit %d: %s", role, r.code, r.stderr)
		}
		return lastLine(r.stdout)
	}
	submitKey, readKey := mk("submit"), mk("read")
	as := func(key string, args ...string) result {
		return runLocal(append([]string{"--server", srv.URL, "--api-key", key}, args...)...)
	}
	jobID := func(r result) string {
		t.Helper()
		if r.code != 0 {
			t.Fatalf("submit: exit %d: %s", r.code, r.stderr)
		}
		return strings.TrimSpace(lastLine(r.stdout))
	}

	mine := jobID(as(submitKey, "submit", "-q", "builds", "--", "true"))
	other := jobID(run(srv, "submit", "-q", "deploys", "--", "true"))

	for _, tc := range []struct {
		key  string
		args string
		want string
	}{
		{submitKey, "submit -q deploys -- true", `may only use queues builds, not "deploys": submit with -q builds`},
		{submitKey, "submit -- true", `not "default": submit with -q builds`},
		{submitKey, "jobs list", "name one (spool jobs list -q builds)"},
		{submitKey, "jobs cancel " + other, "not found"},
		{submitKey, "jobs get " + other, "not found"},
		{readKey, "logs " + other, "not found"},
		{readKey, "jobs list -q deploys", `not "deploys": name the queue (-q builds)`},
		{readKey, "submit -q builds -- true", "may not submit"},
	} {
		if r := as(tc.key, strings.Fields(tc.args)...); r.code == 0 || !strings.Contains(r.stderr, tc.want) {
			t.Errorf("spool %s: exit %d, %q; want a failure saying %q", tc.args, r.code, r.stderr, tc.want)
		}
	}
	// What the keys may do, they do.
	if r := as(readKey, "jobs", "get", mine); r.code != 0 || !strings.Contains(r.stdout, mine) {
		t.Errorf("read key, jobs get of its queue's job: exit %d: %s%s", r.code, r.stdout, r.stderr)
	}
	if r := as(readKey, "jobs", "list", "-q", "builds"); r.code != 0 || !strings.Contains(r.stdout, mine[:8]) {
		t.Errorf("read key, jobs list -q builds: exit %d: %s%s", r.code, r.stdout, r.stderr)
	}
	if r := as(submitKey, "jobs", "cancel", mine); r.code != 0 {
		t.Errorf("submit key, cancel of its queue's job: exit %d: %s", r.code, r.stderr)
	}
	if r := as(readKey, "queues"); r.code != 0 || !strings.Contains(r.stdout, "builds") || strings.Contains(r.stdout, "deploys") {
		t.Errorf("read key, queues: exit %d; want builds only:\n%s%s", r.code, r.stdout, r.stderr)
	}
	// The other queue's job was not touched by the refused cancel.
	if r := run(srv, "jobs", "get", other); r.code != 0 || strings.Contains(r.stdout, "cancel") {
		t.Errorf("the other queue's job after a refused cancel: exit %d:\n%s", r.code, r.stdout)
	}
}
