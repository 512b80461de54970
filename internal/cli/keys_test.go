package cli

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/spool-run/spool/internal/config"
	"github.com/spool-run/spool/server"
	"github.com/spool-run/spool/spooltest"
)

// lastLine is the last line of s.
func lastLine(s string) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return lines[len(lines)-1]
}

// TestKeys: an admin creates a worker key limited to a queue (printed
// alone on the last line, for scripts), lists it, and revokes it; the key
// works until then, only for what its role allows, and not at all after.
func TestKeys(t *testing.T) {
	srv := spooltest.NewServer(t)
	r := run(srv, "keys", "create", "--role", "worker", "--queue", "builds", "--name", "builder-1")
	if r.code != 0 {
		t.Fatalf("keys create: exit %d: %s", r.code, r.stderr)
	}
	key := lastLine(r.stdout)
	if !strings.HasPrefix(key, "spool_") || len(key) < 40 || !strings.Contains(r.stderr, `created worker key "builder-1" for queues builds`) {
		t.Fatalf("keys create printed %q, then %q", r.stdout, r.stderr)
	}

	r = run(srv, "keys", "list")
	if r.code != 0 || !strings.Contains(r.stdout, "builder-1") || !strings.Contains(r.stdout, "worker") || !strings.Contains(r.stdout, "builds") {
		t.Fatalf("keys list: exit %d:\n%s%s", r.code, r.stdout, r.stderr)
	}
	if strings.Contains(r.stdout, key) {
		t.Fatal("keys list shows a key's secret")
	}

	as := func(key string, args ...string) result {
		return runLocal(append([]string{"--server", srv.URL, "--api-key", key}, args...)...)
	}
	if r := as(key, "jobs", "list", "-q", "builds"); r.code != 0 {
		t.Fatalf("a worker key cannot list its queue's jobs: %s", r.stderr)
	}
	if r := as(key, "submit", "-q", "builds", "--", "true"); r.code != 1 || !strings.Contains(r.stderr, `key "builder-1" (role worker) may not submit or cancel jobs`) {
		t.Fatalf("a worker key submitting: exit %d: %s", r.code, r.stderr)
	}
	if r := as(key, "keys", "list"); r.code != 1 || !strings.Contains(r.stderr, "may not manage keys") {
		t.Fatalf("a worker key listing keys: exit %d: %s", r.code, r.stderr)
	}

	if r := run(srv, "keys", "revoke", "builder-1"); r.code != 0 || r.stdout != "revoked key \"builder-1\" (worker)\n" {
		t.Fatalf("keys revoke: exit %d: %q %s", r.code, r.stdout, r.stderr)
	}
	if r := as(key, "jobs", "list", "-q", "builds"); r.code != 1 || !strings.Contains(r.stderr, `API key "builder-1" was revoked`) || !strings.Contains(r.stderr, "the key sent came from --api-key") {
		t.Fatalf("a revoked key: exit %d: %s", r.code, r.stderr)
	}

	// Mistakes are named.
	for args, want := range map[string]string{
		"keys create --name x":                             "--role is needed",
		"keys create --role boss --name x":                 `"boss" is not one of admin, submit, read, worker or ingest`,
		"keys create --role read":                          "--name is needed",
		"keys create --role read --name builder-1":         "builder-1",
		"keys create --role admin --name x --queue builds": "queues limit worker, submit and read keys",
		"keys revoke nobody":                               "nobody",
	} {
		if r := run(srv, strings.Fields(args)...); r.code != 1 || !strings.Contains(r.stderr, want) {
			t.Errorf("spool %s: exit %d, %q; want %q", args, r.code, r.stderr, want)
		}
	}
}

// TestKeyDiscovery: a command finds its key in --api-key, SPOOL_API_KEY
// or, for a server on this machine, the admin key the server wrote to its
// data directory; when none works it says where it looked.
func TestKeyDiscovery(t *testing.T) {
	// A server left to make its own admin key, as `spool server` does.
	srv := spooltest.NewServer(t, spooltest.Config{Server: func(c *server.Config) { c.Auth.AdminKey = "" }})
	if srv.AdminKey == "" {
		t.Fatal("the server wrote no admin key on its first start")
	}
	bare := func(args ...string) result { return runLocal(append([]string{"--server", srv.URL}, args...)...) }

	t.Setenv(config.EnvName("server", "data_dir"), srv.Config().Server.DataDir)
	t.Setenv("SPOOL_API_KEY", "")
	cfgDir := t.TempDir() // no key stored with spool login
	t.Setenv("XDG_CONFIG_HOME", cfgDir)
	if r := bare("jobs", "list"); r.code != 0 {
		t.Fatalf("with the server's admin.key at hand: exit %d: %s", r.code, r.stderr)
	}

	// The file is for servers on this machine: another server is not sent
	// this one's admin key.
	for server, want := range map[string]bool{srv.URL: true, "http://localhost:7070": true, "http://[::1]:7070": true,
		"http://spool.example.com:7070": false, "https://10.0.0.5:7070": false} {
		if key, _ := (&env{server: server}).apiKey(); (key == srv.AdminKey) != want {
			t.Errorf("server %s: admin.key sent: %v, want %v", server, key != "", want)
		}
	}

	empty := t.TempDir()
	t.Setenv(config.EnvName("server", "data_dir"), empty)
	r := bare("jobs", "list")
	if want := "no key was sent: --api-key and SPOOL_API_KEY are empty, " + filepath.Join(cfgDir, "spool", "credentials.json") + " holds no key for " + srv.URL +
		", and " + filepath.Join(empty, "admin.key") + " cannot be read; log in with `spool login --server " + srv.URL + "`"; r.code != 1 || !strings.Contains(r.stderr, want) {
		t.Fatalf("without a key: exit %d: %s; want %q", r.code, r.stderr, want)
	}

	t.Setenv("SPOOL_API_KEY", srv.AdminKey)
	if r := bare("jobs", "list"); r.code != 0 {
		t.Fatalf("with SPOOL_API_KEY: exit %d: %s", r.code, r.stderr)
	}
	t.Setenv("SPOOL_API_KEY", "spool_wrong")
	if r := bare("jobs", "list"); r.code != 1 || !strings.Contains(r.stderr, "not known to the server") || !strings.Contains(r.stderr, "came from SPOOL_API_KEY") {
		t.Fatalf("with a wrong SPOOL_API_KEY: exit %d: %s", r.code, r.stderr)
	}
	// --api-key wins over the environment.
	if r := bare("--api-key", srv.AdminKey, "jobs", "list"); r.code != 0 {
		t.Fatalf("--api-key over SPOOL_API_KEY: exit %d: %s", r.code, r.stderr)
	}
}
