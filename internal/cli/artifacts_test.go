package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spool-run/spool/client"
	"github.com/spool-run/spool/internal/jobjson"
	"github.com/spool-run/spool/spooltest"
)

// TestArtifactCommands: inside a job (SPOOL_JOB_TOKEN, SPOOL_JOB_ID),
// spool artifact upload keeps files and a directory's files under their
// paths; spool artifacts list shows them as a table and as JSON; spool
// artifact download writes one to stdout, to a file, and completes a file
// that holds its start.
func TestArtifactCommands(t *testing.T) {
	srv := spooltest.NewServer(t)
	if _, _, err := srv.Client().Submit(t.Context(), client.SubmitParams{Argv: []string{"true"}, Artifacts: []string{"dist/**"}}); err != nil {
		t.Fatal(err)
	}
	l := spooltest.LeaseJob(t, srv, "")
	id := l.JobID()
	dir := t.TempDir()
	t.Chdir(dir)
	for name, body := range map[string]string{"dist/a.txt": "alpha\n", "dist/sub/b.txt": "bravo\n", "report.txt": "the report\n"} {
		if err := os.MkdirAll(filepath.Dir(name), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(name, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv("SPOOL_JOB_TOKEN", l.JobToken())
	t.Setenv("SPOOL_JOB_ID", id)

	r := runLocal("--server", srv.URL, "artifact", "upload", "dist", "report.txt")
	if r.code != 0 || !strings.Contains(r.stderr, "uploaded 3 artifacts (23 bytes)") {
		t.Fatalf("upload: %d %s", r.code, r.stderr)
	}
	r = runLocal("--server", srv.URL, "artifact", "upload", "--as", "renamed.txt", filepath.Join(dir, "report.txt"))
	if r.code != 0 || !strings.Contains(r.stderr, "kept renamed.txt") {
		t.Fatalf("upload --as: %d %s", r.code, r.stderr)
	}
	r = runLocal("--server", srv.URL, "artifact", "upload", "../outside")
	if r.code == 0 {
		t.Fatalf("uploading a missing file succeeded: %s", r.stderr)
	}

	// The token is for uploads; reading takes a key, here the admin's.
	t.Setenv("SPOOL_JOB_TOKEN", "")
	r = run(srv, "artifacts", "list", id)
	if r.code != 0 {
		t.Fatalf("list: %s", r.stderr)
	}
	rows := strings.Split(strings.TrimSpace(r.stdout), "\n")
	if len(rows) != 5 || !strings.HasPrefix(rows[0], "PATH") || !strings.HasPrefix(rows[1], "dist/a.txt ") || !strings.Contains(rows[1], "6 bytes") {
		t.Fatalf("list printed:\n%s", r.stdout)
	}
	r = run(srv, "artifacts", "list", "--json", id)
	var list jobjson.ArtifactList
	if err := json.Unmarshal([]byte(r.stdout), &list); err != nil || len(list.Artifacts) != 4 || list.Artifacts[3].Path != "report.txt" || len(list.Artifacts[3].SHA256) != 64 {
		t.Fatalf("list --json: %v\n%s", err, r.stdout)
	}

	if r = run(srv, "jobs", "get", id); !strings.Contains(r.stdout, "dist/** (spool artifacts list "+id+")") {
		t.Fatalf("jobs get:\n%s", r.stdout)
	}
	r = run(srv, "artifact", "download", id, "dist/sub/b.txt", "-o", "-")
	if r.code != 0 || r.stdout != "bravo\n" {
		t.Fatalf("download to stdout: %q %s", r.stdout, r.stderr)
	}
	got := filepath.Join(t.TempDir(), "report.txt")
	if err := os.WriteFile(got, []byte("the r"), 0o644); err != nil {
		t.Fatal(err)
	}
	r = run(srv, "artifact", "download", id, "report.txt", "-o", got)
	if b, _ := os.ReadFile(got); r.code != 0 || string(b) != "the report\n" || !strings.Contains(r.stderr, "fetching the rest") {
		t.Fatalf("resumed download: %q %s", b, r.stderr)
	}
	r = run(srv, "artifact", "download", id, "report.txt", "-o", got)
	if r.code != 0 || !strings.Contains(r.stderr, "already") {
		t.Fatalf("a download that is there already: %d %s", r.code, r.stderr)
	}
	r = run(srv, "artifact", "download", id, "nope.txt", "-o", "-")
	if r.code == 0 || !strings.Contains(r.stderr, "no artifact nope.txt") {
		t.Fatalf("a missing artifact: %d %s", r.code, r.stderr)
	}
	l.End(0)
}
