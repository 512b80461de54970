package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/creack/pty"
	"golang.org/x/sys/unix"

	"github.com/spool-run/spool"
	"github.com/spool-run/spool/client"
	"github.com/spool-run/spool/internal/config"
	"github.com/spool-run/spool/internal/credfile"
	"github.com/spool-run/spool/spooltest"
)

// runWith runs spool in process with stdin.
func runWith(stdin io.Reader, args ...string) result {
	var out, errOut bytes.Buffer
	code := Main(args, stdin, &out, &errOut)
	return result{code: code, stdout: out.String(), stderr: errOut.String()}
}

// loggedOutUser is a user with an empty configuration directory, no key in
// the environment and no server's admin.key at hand, working in a
// directory of their own. It returns the configuration directory.
func loggedOutUser(t *testing.T) string {
	t.Helper()
	cfgDir := t.TempDir()
	t.Setenv("XDG_CONFIG_HOME", cfgDir)
	t.Setenv("SPOOL_API_KEY", "")
	t.Setenv("SPOOL_SERVER", "")
	t.Setenv(config.EnvName("server", "data_dir"), t.TempDir())
	t.Chdir(t.TempDir())
	return cfgDir
}

// storedKeys reads the credentials file under cfgDir.
func storedKeys(t *testing.T, cfgDir string) credfile.File {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(cfgDir, "spool", "credentials.json"))
	if err != nil {
		t.Fatal(err)
	}
	var f credfile.File
	if err := json.Unmarshal(b, &f); err != nil {
		t.Fatal(err)
	}
	return f
}

// TestLoginFromAnyDirectory: spool login stores a server's key (checked
// with the server first) in the user's configuration directory, readable
// by the user only; every command then finds it from any directory,
// unless --api-key or SPOOL_API_KEY say otherwise; spool logout removes
// it. A refused key is not stored, and a missing or refused key's error
// names the commands that fix it.
func TestLoginFromAnyDirectory(t *testing.T) {
	srv := spooltest.NewServer(t)
	cfgDir := loggedOutUser(t)
	server := credfile.Server(srv.URL)

	r := runLocal("--server", srv.URL, "jobs", "list")
	if r.code != 1 || !strings.Contains(r.stderr, "no key was sent") || !strings.Contains(r.stderr, "log in with `spool login --server "+server+"`") {
		t.Fatalf("jobs list before logging in: exit %d: %s", r.code, r.stderr)
	}

	r = runWith(strings.NewReader("spool_wrong\n"), "--server", srv.URL, "login")
	if r.code != 1 || !strings.Contains(r.stderr, "refused this key: this API key is not known to the server") || !strings.Contains(r.stderr, "nothing was stored") {
		t.Fatalf("login with a wrong key: exit %d: %s", r.code, r.stderr)
	}
	if _, err := os.Stat(filepath.Join(cfgDir, "spool", "credentials.json")); !os.IsNotExist(err) {
		t.Fatalf("a refused key was stored: %v", err)
	}

	// As the server's first start says: the admin key on stdin.
	r = runWith(strings.NewReader(srv.AdminKey+"\n"), "--server", srv.URL+"/", "login")
	if r.code != 0 || !strings.Contains(r.stdout, `logged in to `+server+` as "admin" (admin)`) {
		t.Fatalf("login: exit %d: %s%s", r.code, r.stdout, r.stderr)
	}
	path := filepath.Join(cfgDir, "spool", "credentials.json")
	for p, want := range map[string]os.FileMode{path: 0o600, filepath.Dir(path): 0o700} {
		if info, err := os.Stat(p); err != nil || info.Mode().Perm() != want {
			t.Errorf("%s: mode %v, want %v (%v)", p, info.Mode().Perm(), want, err)
		}
	}
	if got := storedKeys(t, cfgDir).Servers[server]; got.Key != srv.AdminKey || got.Name != "admin" || got.Role != "admin" {
		t.Errorf("stored %+v", got)
	}

	t.Chdir(t.TempDir())
	if r := runLocal("--server", srv.URL, "jobs", "list"); r.code != 0 {
		t.Fatalf("jobs list from another directory after login: exit %d: %s", r.code, r.stderr)
	}
	// What is given on the command line or in the environment wins.
	t.Setenv("SPOOL_API_KEY", "spool_wrong")
	if r := runLocal("--server", srv.URL, "jobs", "list"); r.code != 1 || !strings.Contains(r.stderr, "not known to the server") ||
		!strings.Contains(r.stderr, "came from SPOOL_API_KEY, which wins over a key stored by `spool login --server "+server+"`") {
		t.Fatalf("SPOOL_API_KEY over the stored key: exit %d: %s", r.code, r.stderr)
	}
	t.Setenv("SPOOL_API_KEY", "")
	if r := runLocal("--server", srv.URL, "--api-key", "spool_wrong", "jobs", "list"); r.code != 1 || !strings.Contains(r.stderr, "came from --api-key") {
		t.Fatalf("--api-key over the stored key: exit %d: %s", r.code, r.stderr)
	}
	// Another server is not sent this one's key.
	if key, _ := (&env{server: "http://127.0.0.2:7070"}).apiKey(); key == srv.AdminKey {
		t.Error("the key stored for one server is sent to another")
	}

	r = runLocal("--server", srv.URL, "logout")
	if r.code != 0 || !strings.Contains(r.stdout, "logged out of "+server) {
		t.Fatalf("logout: exit %d: %s%s", r.code, r.stdout, r.stderr)
	}
	if _, ok := storedKeys(t, cfgDir).Servers[server]; ok {
		t.Error("logout left the key in the file")
	}
	if r := runLocal("--server", srv.URL, "jobs", "list"); r.code != 1 || !strings.Contains(r.stderr, "holds no key for "+server) {
		t.Fatalf("jobs list after logout: exit %d: %s", r.code, r.stderr)
	}
	if r := runLocal("--server", srv.URL, "logout"); r.code != 0 || !strings.Contains(r.stdout, "no key was stored for "+server) {
		t.Fatalf("logout again: exit %d: %s", r.code, r.stdout)
	}

	// A stored key that is revoked later: the error says how to replace
	// or forget it.
	_, secret, err := srv.Client().CreateKey(context.Background(), client.KeyParams{Name: "carol", Role: spool.RoleRead})
	if err != nil {
		t.Fatal(err)
	}
	if r := runLocal("--server", srv.URL, "--api-key", secret, "login"); r.code != 0 || !strings.Contains(r.stdout, `as "carol" (read)`) {
		t.Fatalf("login with --api-key: exit %d: %s%s", r.code, r.stdout, r.stderr)
	}
	if _, err := srv.Client().RevokeKey(context.Background(), "carol"); err != nil {
		t.Fatal(err)
	}
	if r := runLocal("--server", srv.URL, "jobs", "list"); r.code != 1 || !strings.Contains(r.stderr, `API key "carol" was revoked`) ||
		!strings.Contains(r.stderr, "`spool login --server "+server+"` stores another, `spool logout --server "+server+"` forgets it") {
		t.Fatalf("jobs list with a revoked stored key: exit %d: %s", r.code, r.stderr)
	}
}

// TestLoginPromptsWithoutEcho: at a terminal, spool login asks for the key
// and reads it with echo off, so it never shows on the screen.
func TestLoginPromptsWithoutEcho(t *testing.T) {
	srv := spooltest.NewServer(t)
	cfgDir := loggedOutUser(t)
	ptmx, tty, err := pty.Open()
	if err != nil {
		t.Fatal(err)
	}
	defer ptmx.Close()
	defer tty.Close()

	done := make(chan result, 1)
	go func() { done <- runWith(tty, "--server", srv.URL, "login") }()
	// Type the key once the terminal no longer echoes.
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		tio, err := unix.IoctlGetTermios(int(tty.Fd()), unix.TCGETS)
		if err != nil {
			t.Fatal(err)
		}
		if tio.Lflag&unix.ECHO == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("spool login never turned the terminal's echo off")
		}
	}
	if _, err := ptmx.WriteString(srv.AdminKey + "\n"); err != nil {
		t.Fatal(err)
	}
	r := await(t, done)
	if r.code != 0 || !strings.Contains(r.stderr, "API key for "+credfile.Server(srv.URL)+": ") || !strings.Contains(r.stdout, "logged in to") {
		t.Fatalf("login at a terminal: exit %d: %s%s", r.code, r.stdout, r.stderr)
	}
	if got := storedKeys(t, cfgDir).Servers[credfile.Server(srv.URL)].Key; got != srv.AdminKey {
		t.Fatalf("stored %q", got)
	}
	// What the terminal showed, up to a mark written after the login,
	// does not hold the key.
	if _, err := tty.WriteString("--mark--\n"); err != nil {
		t.Fatal(err)
	}
	var screen bytes.Buffer
	buf := make([]byte, 1024)
	for !strings.Contains(screen.String(), "--mark--") {
		n, err := ptmx.Read(buf)
		if err != nil {
			t.Fatalf("reading the terminal: %v (so far %q)", err, screen.String())
		}
		screen.Write(buf[:n])
	}
	if strings.Contains(screen.String(), srv.AdminKey) {
		t.Errorf("the key was echoed on the terminal: %q", screen.String())
	}
}
