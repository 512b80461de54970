package e2e

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spool-run/spool"
	"github.com/spool-run/spool/internal/store/backends/pgstore/pgtest"
)

// TestSecrets runs testSecrets on every store a server keeps data in:
// SQLite, PostgreSQL and AWS (SQS + DynamoDB test servers).
func TestSecrets(t *testing.T) {
	for _, b := range []struct {
		name string
		args func(t *testing.T) []string
	}{
		{"sqlite", func(*testing.T) []string { return nil }},
		{"postgres", func(t *testing.T) []string { return configArgs(t, postgresConfig(pgtest.NewDatabase(t))) }},
		{"aws", awsStore},
	} {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			testSecrets(t, b.args(t))
		})
	}
}

// testSecrets: `spool submit --secret NAME` takes the value from its
// environment; the job's command gets it (it prints its SHA-256) and its
// output is stored with "***" where it printed the value or its base64;
// `spool jobs get` shows NAME=***, and nothing a reader can ask for (jobs
// get --json, logs, the Connect API, REST, the job page) nor any log line
// of the server and the worker holds the value, nor any file the server
// (SQLite) or the worker keeps. A rerun gets the secret again; deleting
// the jobs leaves nothing of it.
func testSecrets(t *testing.T, store []string) {
	addr, dataDir, spoolDir := freePort(t), t.TempDir(), t.TempDir()
	url := "http://" + addr
	srv, c := startServer(t, addr, dataDir, store...)
	wk := startWorker(t, "worker", url, spoolDir)
	value := "e2e-secret-" + rand.Text()
	sum := sha256.Sum256([]byte(value))
	env := []string{"SPOOL_API_KEY=" + adminKey, "SPOOL_SERVER=" + url}
	cli := func(extraEnv []string, args ...string) string {
		t.Helper()
		p := runIn(t, "spool "+strings.Join(args, " "), "", append(env, extraEnv...), args...)
		if err := p.cmd.Wait(); err != nil {
			t.Fatalf("spool %s: %v\n%s", strings.Join(args, " "), err, p.out.String())
		}
		return p.out.String()
	}
	lastLine := func(s string) string {
		lines := strings.Split(strings.TrimSpace(s), "\n")
		return lines[len(lines)-1]
	}

	script := `echo "token: $DEPLOY_TOKEN"; printf %s "$DEPLOY_TOKEN" | base64; printf %s "$DEPLOY_TOKEN" | sha256sum | cut -c1-64`
	id := lastLine(cli([]string{"DEPLOY_TOKEN=" + value}, "submit", "--secret", "DEPLOY_TOKEN", "--shell", script))
	if j := waitFinal(t, c, id); j.State != spool.Succeeded {
		t.Fatalf("job: %v", j.Result)
	}
	want := "token: ***\n***\n" + hex.EncodeToString(sum[:]) + "\n"
	if logs := cli(nil, "logs", id); logs != want {
		t.Fatalf("spool logs: %q, want %q", logs, want)
	}
	if got := cli(nil, "jobs", "get", id); !strings.Contains(got, "DEPLOY_TOKEN=***") {
		t.Fatalf("spool jobs get does not show the secret's name:\n%s", got)
	}
	shown := cli(nil, "jobs", "get", "--json", id)
	if !strings.Contains(shown, `"secret_names": [`) || !strings.Contains(shown, `"DEPLOY_TOKEN"`) {
		t.Fatalf("spool jobs get --json does not name the secret:\n%s", shown)
	}
	shown += cli(nil, "jobs", "list", "--json")

	rerun := lastLine(cli(nil, "jobs", "rerun", id))
	if j := waitFinal(t, c, rerun); j.State != spool.Succeeded {
		t.Fatalf("rerun: %v", j.Result)
	}
	if logs := cli(nil, "logs", rerun); logs != want {
		t.Fatalf("spool logs of the rerun: %q, want %q (the secret again)", logs, want)
	}

	// Every way of reading the jobs.
	for _, jid := range []string{id, rerun} {
		j, err := c.Job(context.Background(), jid)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := json.Marshal(j)
		shown += string(b)
		for _, path := range []string{"/api/v1/jobs/" + jid, "/api/v1/jobs/" + jid + "/logs", "/api/v1/jobs/" + jid + "/logs/raw", "/jobs/" + jid} {
			shown += get(t, url+path)
		}
	}
	shown += get(t, url+"/api/v1/jobs")
	forms := []string{value, base64.StdEncoding.EncodeToString([]byte(value))}
	for _, f := range forms {
		if strings.Contains(shown, f) {
			t.Fatal("a reader of the jobs is shown the secret")
		}
	}

	cli(nil, "jobs", "delete", id, rerun)
	for _, p := range []*proc{srv, wk} {
		for _, f := range forms {
			if strings.Contains(p.out.String(), f) {
				t.Fatal("the server or the worker logged the secret")
			}
		}
	}
	// What the server keeps (the SQLite files, when it keeps them) and
	// what the worker spooled hold nothing of it.
	for _, dir := range []string{dataDir, spoolDir} {
		_ = filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			b, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			for _, f := range forms {
				if bytes.Contains(b, []byte(f)) {
					t.Fatalf("%s holds the secret", path)
				}
			}
			return nil
		})
	}
}

// get is the body of a GET of url with the tests' admin key.
func get(t *testing.T, url string) string {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+adminKey)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 8<<20))
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %d, %v", url, resp.StatusCode, err)
	}
	return string(b)
}
