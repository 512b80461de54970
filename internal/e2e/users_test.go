package e2e

import (
	"os"
	"os/exec"
	"os/user"
	"strconv"
	"syscall"
	"testing"
)

// jobUser is the user the tests run jobs as (spool worker --run-as): one
// with nothing of its own, made by scripts/test-deps.sh.
const jobUser = "spool-job-test"

// needRoot fails the test unless it runs as root: what it checks is one
// user kept from another's files, which only root can set up.
func needRoot(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Fatalf("this test runs processes as other users, which needs root: run it (make test) as root")
	}
}

// lookupUser returns name's user, failing the test with how to make it
// when the machine has none.
func lookupUser(t *testing.T, name string) *user.User {
	t.Helper()
	u, err := user.Lookup(name)
	if err != nil {
		t.Fatalf("user %s: %v: make test creates it (scripts/test-deps.sh), or: useradd --system --no-create-home --shell /usr/sbin/nologin %s", name, err, name)
	}
	return u
}

// runAsUser runs argv as the user name and returns what it printed, and
// how it ended.
func runAsUser(t *testing.T, name string, argv ...string) (string, error) {
	t.Helper()
	needRoot(t)
	u := lookupUser(t, name)
	uid, _ := strconv.ParseUint(u.Uid, 10, 32)
	gid, _ := strconv.ParseUint(u.Gid, 10, 32)
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}}
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// sharedDir is a directory every user may enter (0755), as a project's
// checkout or /srv is: what keeps another user out of what is in it is
// then only the modes spool gives its own files. (t.TempDir's parent is
// its owner's only, which would hide everything.)
func sharedDir(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "spool-e2e-shared-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}
