package cli

import (
	"context"
	"strings"
	"testing"

	"github.com/spool-run/spool/client"
	"github.com/spool-run/spool/spooltest"
	"github.com/spool-run/spool/worker"
)

// TestSubmitSecret: --secret NAME takes the value from spool's environment
// and NAME=VALUE from the flag; the job's command gets both, its output
// shows them as ***, and jobs get shows NAME=***, with --json the names
// alone.
func TestSubmitSecret(t *testing.T) {
	srv := spooltest.NewServer(t)
	spooltest.NewWorker(t, srv, worker.Config{})
	const fromEnv, fromFlag = "value-from-the-environment", "value-from-the-flag"
	t.Setenv("CLI_TEST_TOKEN", fromEnv)
	r := run(srv, "submit", "-f", "--secret", "CLI_TEST_TOKEN", "--secret", "OTHER="+fromFlag,
		"--shell", `echo "$CLI_TEST_TOKEN $OTHER"; test ${#CLI_TEST_TOKEN} = 26 && test ${#OTHER} = 19`)
	if r.code != 0 || r.stdout != "*** ***\n" {
		t.Fatalf("submit -f: exit %d, stdout %q, stderr %q; want the secrets masked", r.code, r.stdout, r.stderr)
	}
	jobs, _, err := srv.Client().JobsPage(context.Background(), client.ListParams{})
	if err != nil || len(jobs) != 1 {
		t.Fatalf("jobs: %v, %v", jobs, err)
	}
	id := jobs[0].ID
	get := run(srv, "jobs", "get", id)
	if !strings.Contains(get.stdout, "Secrets:") || !strings.Contains(get.stdout, "CLI_TEST_TOKEN=***, OTHER=***") {
		t.Fatalf("jobs get:\n%s", get.stdout)
	}
	asJSON := run(srv, "jobs", "get", "--json", id)
	if !strings.Contains(asJSON.stdout, `"secret_names": [`) {
		t.Fatalf("jobs get --json:\n%s", asJSON.stdout)
	}
	for _, out := range []string{get.stdout, asJSON.stdout, run(srv, "jobs", "list", "--json").stdout} {
		if strings.Contains(out, fromEnv) || strings.Contains(out, fromFlag) {
			t.Fatalf("a secret's value is shown:\n%s", out)
		}
	}
}

// TestSubmitSecretRefusals: a secret that cannot be given is refused
// before a job is made, by its name, never repeating its value.
func TestSubmitSecretRefusals(t *testing.T) {
	srv := spooltest.NewServer(t)
	t.Setenv("CLI_TEST_SHORT", "abc")
	wantRefusal(t, "unset", run(srv, "submit", "--secret", "CLI_TEST_UNSET", "--", "true"),
		"--secret CLI_TEST_UNSET: $CLI_TEST_UNSET is not set in spool's environment; export it, or give --secret CLI_TEST_UNSET=VALUE")
	wantRefusal(t, "twice", run(srv, "submit", "--secret", "A=value1", "--secret", "A=value2", "--", "true"),
		"--secret A is given twice")
	wantRefusal(t, "no name", run(srv, "submit", "--secret", "=value", "--", "true"),
		"--secret: give NAME (its value from the environment) or NAME=VALUE")
	short := run(srv, "submit", "--secret", "CLI_TEST_SHORT", "--", "true")
	if short.code != 1 || !strings.Contains(short.stderr, "secret CLI_TEST_SHORT is 3 bytes; a secret must be at least 4 bytes") ||
		strings.Contains(short.stderr, "abc") {
		t.Errorf("a short secret: exit %d, stderr %q", short.code, short.stderr)
	}
	if jobs, _, err := srv.Client().JobsPage(context.Background(), client.ListParams{}); err != nil || len(jobs) != 0 {
		t.Fatalf("refused submissions made jobs: %v %v", jobs, err)
	}
}
