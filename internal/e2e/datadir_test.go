package e2e

import (
	"crypto/rand"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestDataDirIsTheOwnersOnly: a server given a data directory that
// another user may enter (mkdir -m755), with a token key left readable,
// makes both its owner's only and says so; the files it writes there (the
// admin key, the database and its journals) are 0600; and another user
// (nobody) cannot read a job's secret environment from the database's
// write-ahead log, where it lands first.
func TestDataDirIsTheOwnersOnly(t *testing.T) {
	t.Parallel()
	needRoot(t)
	root := sharedDir(t)
	data := filepath.Join(root, "d")
	if err := os.Mkdir(data, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(data, 0o755); err != nil { // whatever the umask
		t.Fatal(err)
	}
	tokenKey := filepath.Join(data, "token.key")
	if err := os.WriteFile(tokenKey, []byte(rand.Text()+rand.Text()), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(tokenKey, 0o644); err != nil {
		t.Fatal(err)
	}
	addr := freePort(t)
	srv := runIn(t, "server", root, []string{"SPOOL_SERVER_ADDR=" + addr}, "server", "--data-dir", "d")
	adminKey := waitFile(t, filepath.Join(data, "admin.key"), srv)

	submit := runIn(t, "submit", root, []string{"SPOOL_SERVER=http://" + addr, "SPOOL_API_KEY=" + adminKey},
		"submit", "-e", "SECRET=hunter2", "--", "true")
	if err := submit.cmd.Wait(); err != nil {
		t.Fatalf("spool submit: %v\n%s", err, submit.out.String())
	}

	wal := filepath.Join(data, "spool.db-wal")
	db, _ := os.ReadFile(filepath.Join(data, "spool.db"))
	walBytes, _ := os.ReadFile(wal)
	if !strings.Contains(string(db)+string(walBytes), "hunter2") {
		t.Fatal("the job's environment is in neither the database nor its log: the test no longer shows what it means to")
	}
	if out, err := runAsUser(t, "nobody", "cat", wal); err == nil || !strings.Contains(out, "Permission denied") {
		t.Errorf("user nobody reading %s: %v, %d bytes (the secret among them: %t); want Permission denied",
			wal, err, len(out), strings.Contains(out, "hunter2"))
	}

	if fi, err := os.Stat(data); err != nil || fi.Mode().Perm() != 0o700 {
		t.Errorf("the data directory: %v, mode %v; want 0700", err, fi.Mode().Perm())
	}
	for _, name := range []string{"admin.key", "token.key", "spool.db", "spool.db-wal", "spool.db-shm"} {
		fi, err := os.Stat(filepath.Join(data, name))
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		if fi.Mode().Perm() != fs.FileMode(0o600) {
			t.Errorf("%s has mode %#o, want 0600", name, fi.Mode().Perm())
		}
	}
	for _, said := range []string{"the data directory was open to other users", "was=0755", "a key file was readable by other users", "was=0644"} {
		if !strings.Contains(srv.out.String(), said) {
			t.Errorf("the server did not say %q:\n%s", said, srv.out.String())
		}
	}
}

// waitFile waits for a file that p writes and returns what it holds.
func waitFile(t *testing.T, path string, p *proc) string {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if b, err := os.ReadFile(path); err == nil && len(b) > 0 {
			return strings.TrimSpace(string(b))
		}
	}
	t.Fatalf("no %s after 30s:\n%s", path, p.out.String())
	return ""
}
