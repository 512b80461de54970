package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// loginLine is the command a server prints on its first start.
var loginLine = regexp.MustCompile(`spool login --server \S+ < \S+`)

// TestLoginFromTheFirstStart is what a person does after the first start,
// with the real binary: the server prints the command that logs this
// machine's spool in; run as printed, from another directory, it stores
// the admin key in the user's configuration directory (mode 600), and
// spool commands then work from any directory, until spool logout.
func TestLoginFromTheFirstStart(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	addr := freePort(t)
	srv := runIn(t, "server", dir, []string{"SPOOL_SERVER_ADDR=" + addr}, "server")
	var line string
	for deadline := time.Now().Add(30 * time.Second); line == ""; time.Sleep(20 * time.Millisecond) {
		line = loginLine.FindString(srv.out.String())
		if time.Now().After(deadline) {
			t.Fatalf("the server printed no login command after 30s:\n%s", srv.out.String())
		}
	}
	if want := "spool login --server http://" + addr + " < " + filepath.Join(dir, "spool-data", "admin.key"); line != want {
		t.Errorf("the server printed %q, want %q", line, want)
	}

	cfgDir := t.TempDir()
	user := []string{"XDG_CONFIG_HOME=" + cfgDir, "SPOOL_SERVER=http://" + addr}
	if out, err := shell(t, t.TempDir(), user, line); err != nil || !strings.Contains(out, `logged in to http://`+addr+` as "admin" (admin)`) {
		t.Fatalf("%s: %v\n%s", line, err, out)
	}
	info, err := os.Stat(filepath.Join(cfgDir, "spool", "credentials.json"))
	if err != nil || info.Mode().Perm() != 0o600 {
		t.Fatalf("the credentials file: %v %v", info, err)
	}
	if out, err := shell(t, t.TempDir(), user, "spool jobs list"); err != nil {
		t.Fatalf("spool jobs list from another directory: %v\n%s", err, out)
	}
	if out, err := shell(t, t.TempDir(), user, "spool logout"); err != nil || !strings.Contains(out, "logged out of http://"+addr) {
		t.Fatalf("spool logout: %v\n%s", err, out)
	}
	out, err := shell(t, t.TempDir(), user, "spool jobs list")
	if err == nil || !strings.Contains(out, "log in with `spool login --server http://"+addr+"`") {
		t.Fatalf("spool jobs list after logout: %v\n%s", err, out)
	}
}

// shell runs line with sh in dir, as a person would type it, with env
// added to the environment (none of the test's own spool settings) and
// the spool under test first on the PATH. It returns what it printed.
func shell(t *testing.T, dir string, env []string, line string) (string, error) {
	t.Helper()
	cmd := exec.Command("sh", "-c", line)
	cmd.Dir = dir
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "SPOOL_") && !strings.HasPrefix(kv, "PATH=") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(cmd.Env, "PATH="+filepath.Dir(spoolBin)+string(os.PathListSeparator)+os.Getenv("PATH"))
	cmd.Env = append(cmd.Env, env...)
	out, err := cmd.CombinedOutput()
	return string(out), err
}
