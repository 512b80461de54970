package cli

import (
	"encoding/json"
	"io"
	"net/http"
	"reflect"
	"strings"
	"testing"

	"github.com/spool-run/spool/spooltest"
)

// TestJSONIsTheRESTShape: --json prints a job (or a page of jobs) exactly
// as the REST API serves it: state names, numbers as numbers, the same
// fields.
func TestJSONIsTheRESTShape(t *testing.T) {
	srv := spooltest.NewServer(t)
	done := spooltest.RunJob(t, srv, spooltest.Seq(1, 3)...)
	rest := func(path string) any { t.Helper(); return restJSON(t, srv, path) }
	cli := func(args ...string) any { t.Helper(); return cliJSON(t, srv, args...) }
	same := func(what string, got, want any) { t.Helper(); sameJSON(t, what, got, want) }

	got := cli("jobs", "get", "--json", done.ID)
	same("jobs get --json", got, rest("/api/v1/jobs/"+done.ID))
	if m := got.(map[string]any); m["state"] != "succeeded" || m["line_count"] != 3.0 {
		t.Errorf("jobs get --json: state %v, line_count %#v; want \"succeeded\" and the number 3", m["state"], m["line_count"])
	}
	queued := cli("submit", "--json", "-q", "later", "--", "make", "test").(map[string]any)
	id, _ := queued["job_id"].(string)
	same("submit --json", queued, rest("/api/v1/jobs/"+id))
	same("jobs list --json", cli("jobs", "list", "--json"), rest("/api/v1/jobs?limit=20"))
	cancelled := cli("jobs", "cancel", "--json", id)
	same("jobs cancel --json", cancelled, rest("/api/v1/jobs/"+id))
	if cancelled.(map[string]any)["state"] != "cancelled" {
		t.Errorf("jobs cancel --json: %v", cancelled)
	}
}

// TestScheduleJSONIsTheRESTShape: --json prints a schedule, its list and
// the queues as the REST API serves them.
func TestScheduleJSONIsTheRESTShape(t *testing.T) {
	srv := spooltest.NewServer(t)
	created := cliJSON(t, srv, "schedules", "create", "nightly", "--cron", "0 3 * * *", "--timezone", "Europe/Paris", "-q", "builds",
		"--priority", "3", "--json", "--", "make", "nightly")
	sameJSON(t, "schedules create --json", created, restJSON(t, srv, "/api/v1/schedules/nightly"))
	sameJSON(t, "schedules get --json", cliJSON(t, srv, "schedules", "get", "nightly", "--json"), restJSON(t, srv, "/api/v1/schedules/nightly"))
	sameJSON(t, "schedules list --json", cliJSON(t, srv, "schedules", "list", "--json"), restJSON(t, srv, "/api/v1/schedules"))
	cliJSON(t, srv, "submit", "--json", "-q", "builds", "--in", "1h", "--", "make")
	sameJSON(t, "queues --json", cliJSON(t, srv, "queues", "--json"), restJSON(t, srv, "/api/v1/queues"))
}

// restJSON is what the REST API serves at path, decoded.
func restJSON(t *testing.T, srv *spooltest.Server, path string) any {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, srv.URL+path, nil)
	req.Header.Set("Authorization", "Bearer "+srv.AdminKey)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatalf("GET %s: %v: %s", path, err, b)
	}
	return v
}

// cliJSON is what spool args prints, decoded.
func cliJSON(t *testing.T, srv *spooltest.Server, args ...string) any {
	t.Helper()
	r := run(srv, args...)
	var v any
	if err := json.Unmarshal([]byte(r.stdout), &v); r.code != 0 || err != nil {
		t.Fatalf("spool %s: exit %d, %v: %s%s", strings.Join(args, " "), r.code, err, r.stdout, r.stderr)
	}
	return v
}

// sameJSON fails unless the command line printed what REST serves.
func sameJSON(t *testing.T, what string, got, want any) {
	t.Helper()
	if !reflect.DeepEqual(got, want) {
		g, _ := json.Marshal(got)
		w, _ := json.Marshal(want)
		t.Errorf("%s prints\n  %s\nREST serves\n  %s", what, g, w)
	}
}
