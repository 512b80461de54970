package cli

import (
	"bytes"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/spool-run/spool/internal/ingest/ingesttest"
	"github.com/spool-run/spool/spooltest"
)

// TestIngestCommands: an ingest key made on the command line sends a
// source's lines; jobs list --source finds its job, jobs get and logs show
// it, logs rebuild finds the log sound, and ingest complete ends it.
func TestIngestCommands(t *testing.T) {
	srv := spooltest.NewServer(t)
	r := run(srv, "keys", "create", "--role", "ingest", "--name", "vector")
	if r.code != 0 {
		t.Fatalf("keys create --role ingest: exit %d: %s", r.code, r.stderr)
	}
	key := lastLine(r.stdout)
	var lines []ingesttest.Line
	for i := 1; i <= 120; i++ {
		lines = append(lines, ingesttest.Line{Source: "billing", ID: strconv.Itoa(i), Timestamp: int64(i), Message: "charged account " + strconv.Itoa(i)})
	}
	req, _ := http.NewRequest(http.MethodPost, srv.URL+"/api/v1/ingest/lines", bytes.NewReader(ingesttest.Lines(lines...)))
	req.Header.Set("Authorization", "Bearer "+key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("sending lines: %v %v", resp, err)
	}
	resp.Body.Close()

	r = run(srv, "jobs", "list", "--source", "billing")
	fields := strings.Fields(head(strings.SplitN(r.stdout, "\n", 3)[1]))
	if r.code != 0 || len(fields) < 3 || fields[2] != "running" || !strings.Contains(r.stdout, "(log of billing)") {
		t.Fatalf("jobs list --source: exit %d:\n%s%s", r.code, r.stdout, r.stderr)
	}
	id := fields[0]
	if r := run(srv, "jobs", "list", "--source", "nobody"); r.code != 0 || r.stdout != "no jobs of source \"nobody\"\n" {
		t.Fatalf("jobs list of an unknown source: %q %s", r.stdout, r.stderr)
	}
	if r := run(srv, "jobs", "get", id); r.code != 0 || !strings.Contains(r.stdout, "Source:") || !strings.Contains(r.stdout, "billing (external") || strings.Contains(r.stdout, "Attempt:") {
		t.Fatalf("jobs get: exit %d:\n%s%s", r.code, r.stdout, r.stderr)
	}
	if r := run(srv, "logs", "--from", "119", id); r.code != 0 || r.stdout != "charged account 119\ncharged account 120\n" {
		t.Fatalf("logs --from 119: exit %d: %q %s", r.code, r.stdout, r.stderr)
	}
	if r := run(srv, "logs", "rebuild", id); r.code != 0 || r.stdout != "rebuilt from 120 events: 120 lines in 3 stored items\nthe stored log was exactly that; nothing was written\n" {
		t.Fatalf("logs rebuild: exit %d: %q %s", r.code, r.stdout, r.stderr)
	}
	as := func(args ...string) result {
		return runLocal(append([]string{"--server", srv.URL, "--api-key", key}, args...)...)
	}
	if r := as("logs", "rebuild", id); r.code != 1 || !strings.Contains(r.stderr, `(role ingest) may not rebuild logs`) {
		t.Fatalf("logs rebuild with an ingest key: exit %d: %s", r.code, r.stderr)
	}
	if r := as("ingest", "complete", "billing"); r.code != 0 || !strings.Contains(r.stdout, "succeeded") {
		t.Fatalf("ingest complete: exit %d:\n%s%s", r.code, r.stdout, r.stderr)
	}
	for args, want := range map[string]string{
		"ingest complete billing":        `source "billing" has no open job`,
		"ingest complete":                "name one source, or one job with --job",
		"ingest complete a --job b":      "name one source, or one job with --job",
		"logs rebuild no-such-job":       "no-such-job",
		"ingest complete --job nojob-id": "nojob-id",
	} {
		if r := run(srv, strings.Fields(args)...); r.code != 1 || !strings.Contains(r.stderr, want) {
			t.Errorf("spool %s: exit %d, %q; want %q", args, r.code, r.stderr, want)
		}
	}
}
