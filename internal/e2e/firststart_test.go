package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestFirstStartNeedsNothingCopied is the README's first steps, as real
// processes in one directory: `spool server` writes an admin key to
// ./spool-data/admin.key (mode 600) on its first start, and `spool worker`
// and `spool submit` on the same machine find it there. A wrong key is
// refused with a message that says where it came from.
func TestFirstStartNeedsNothingCopied(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	addr := freePort(t)
	server := []string{"SPOOL_SERVER_ADDR=" + addr}
	clientEnv := []string{"SPOOL_SERVER=http://" + addr}
	srv := runIn(t, "server", dir, server, "server")

	keyFile := filepath.Join(dir, "spool-data", "admin.key")
	var info os.FileInfo
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		var err error
		if info, err = os.Stat(keyFile); err == nil && info.Size() > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no %s after 30s:\n%s", keyFile, srv.out.String())
		}
	}
	if info.Mode().Perm() != 0o600 {
		t.Errorf("admin.key has mode %v, want 0600", info.Mode().Perm())
	}
	key, _ := os.ReadFile(keyFile)

	runIn(t, "worker", dir, clientEnv, "worker", "--spool-dir", t.TempDir())
	submit := runIn(t, "submit", dir, clientEnv, "submit", "--follow", "--", "echo", "hello from the first start")
	if err := submit.cmd.Wait(); err != nil || !strings.Contains(submit.out.String(), "hello from the first start") {
		t.Fatalf("spool submit --follow: %v:\n%s", err, submit.out.String())
	}

	// By now the server has said where the key is (it writes the file,
	// then says so).
	if !strings.Contains(srv.out.String(), filepath.Join("spool-data", "admin.key")) {
		t.Errorf("the server did not say where the admin key is:\n%s", srv.out.String())
	}

	wrong := runIn(t, "submit with a wrong key", dir, append(clientEnv, "SPOOL_API_KEY=spool_wrong"), "submit", "--", "true")
	if err := wrong.cmd.Wait(); err == nil || !strings.Contains(wrong.out.String(), "not known to the server") || !strings.Contains(wrong.out.String(), "SPOOL_API_KEY") {
		t.Fatalf("a wrong key: %v:\n%s", err, wrong.out.String())
	}

	// A restart keeps the key: nothing new is written.
	srv.kill9(t)
	runIn(t, "server again", dir, server, "server")
	list := runIn(t, "jobs list", dir, clientEnv, "jobs", "list")
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		if err := list.cmd.Wait(); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("spool jobs list after the restart:\n%s", list.out.String())
		}
		list = runIn(t, "jobs list", dir, clientEnv, "jobs", "list")
	}
	if again, _ := os.ReadFile(keyFile); string(again) != string(key) {
		t.Error("the restart wrote a new admin key")
	}
}
