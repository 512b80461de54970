package e2e

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/spool-run/spool"
	"github.com/spool-run/spool/client"
)

// oneMachine is the README's set-up on one machine: `spool server` and
// `spool worker` started in the same directory (the server's data in
// ./spool-data, the worker's in ./spool-worker), the command line finding
// the admin key there. The command line's saved keys are looked for under
// dir/config.
type oneMachine struct {
	dir      string
	env      []string // for commands run there: the server's address, the config directory
	admin    *client.Client
	adminKey string
	worker   *proc
}

// startOneMachine starts the server, then a worker with workerArgs, in dir.
func startOneMachine(t *testing.T, dir string, workerArgs ...string) *oneMachine {
	t.Helper()
	addr := freePort(t)
	m := &oneMachine{dir: dir, env: []string{"SPOOL_SERVER=http://" + addr, "XDG_CONFIG_HOME=" + filepath.Join(dir, "config")}}
	srv := runIn(t, "server", dir, []string{"SPOOL_SERVER_ADDR=" + addr}, "server")
	m.adminKey = waitFile(t, filepath.Join(dir, "spool-data", "admin.key"), srv)
	var err error
	if m.admin, err = client.New(client.Config{URL: "http://" + addr, APIKey: m.adminKey}); err != nil {
		t.Fatal(err)
	}
	m.worker = runIn(t, "worker", dir, m.env, append([]string{"worker"}, workerArgs...)...)
	return m
}

// spool runs a spool command there, with env added, to its end.
func (m *oneMachine) spool(t *testing.T, env []string, args ...string) (string, error) {
	t.Helper()
	p := runIn(t, "spool "+strings.Join(args, " "), m.dir, append(append([]string{}, m.env...), env...), args...)
	err := p.cmd.Wait()
	return p.out.String(), err
}

// submitted is the job `spool submit -f` said it follows.
var submitted = regexp.MustCompile(`spool: job (\S+); following`)

// jobText is a finished job's output, stdout and stderr as they came.
func (m *oneMachine) jobText(t *testing.T, submitOut string) string {
	t.Helper()
	id := submitted.FindStringSubmatch(submitOut)
	if id == nil {
		t.Fatalf("spool submit -f did not name its job:\n%s", submitOut)
	}
	waitFinal(t, m.admin, id[1])
	log, err := m.admin.ReadLog(context.Background(), id[1])
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for _, ev := range log {
		for _, d := range ev.Lines {
			b.WriteString(d.Text)
			b.WriteByte('\n')
		}
		if ev.Type == spool.EventProcessError {
			t.Fatalf("the job could not run: %s", ev.Error)
		}
	}
	return b.String()
}

// TestSubmitKeyCannotReadTheAdminKey: on the README's one machine, a job
// submitted with a submit key that reads spool-data/admin.key finds no such
// file (it runs in a directory of its own, not the worker's), and whatever
// it printed is refused as a key (401) by `spool keys list`, which takes
// the admin key. The worker said once, as it started, that its jobs could
// still reach the key, and how to prevent it.
func TestSubmitKeyCannotReadTheAdminKey(t *testing.T) {
	t.Parallel()
	m := startOneMachine(t, t.TempDir())
	out, err := m.spool(t, nil, "keys", "create", "--role", "submit", "--name", "alice")
	if err != nil {
		t.Fatalf("spool keys create: %v\n%s", err, out)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	submitKey := lines[len(lines)-1]

	out, err = m.spool(t, []string{"SPOOL_API_KEY=" + submitKey}, "submit", "-f", "--shell", "cat spool-data/admin.key")
	if err == nil {
		t.Fatalf("the job reading spool-data/admin.key succeeded:\n%s", out)
	}
	printed := m.jobText(t, out)
	if !strings.Contains(printed, "spool-data/admin.key: No such file or directory") {
		t.Fatalf("the job printed %q; want cat to find no spool-data/admin.key where it runs", printed)
	}
	if out, err := m.spool(t, []string{"SPOOL_API_KEY=" + m.adminKey}, "keys", "list"); err != nil {
		t.Fatalf("spool keys list with the admin key: %v\n%s", err, out)
	}
	for _, candidate := range append(strings.Fields(printed), strings.TrimSpace(printed)) {
		out, err := m.spool(t, []string{"SPOOL_API_KEY=" + candidate}, "keys", "list")
		// A key the server does not know, or text that is no key at all:
		// either way the call is refused as unauthenticated.
		if err == nil || !strings.Contains(out, "not known to the server") && !strings.Contains(out, "an API key is needed") {
			t.Fatalf("spool keys list with %q, which the job printed: %v\n%s; want it refused (401)", candidate, err, out)
		}
	}

	const warning = "jobs run as this worker's user and can read a spool server's keys or data"
	logs := m.worker.out.String()
	if n := strings.Count(logs, warning); n != 1 || !strings.Contains(logs, "--run-as USER") ||
		!strings.Contains(logs, filepath.Join(m.dir, "spool-data", "admin.key")) {
		t.Errorf("the worker should say once that its jobs can read %s and how to prevent it; it said it %d times:\n%s",
			filepath.Join(m.dir, "spool-data", "admin.key"), n, logs)
	}
}

// TestRunAsCannotReadSecrets: the same one machine in a directory anyone
// may enter, the worker run by root with --run-as: a job (and the checkout
// of its repository) runs as that user, in a directory of its own, and
// gets "Permission denied" reading the server's admin key, token key and
// database, the command line's saved keys, and the worker's spool
// directory.
func TestRunAsCannotReadSecrets(t *testing.T) {
	t.Parallel()
	needRoot(t)
	u := lookupUser(t, jobUser)
	m := startOneMachine(t, sharedDir(t), "--run-as", jobUser)
	creds := filepath.Join(m.dir, "config", "spool", "credentials.json")
	if err := os.MkdirAll(filepath.Dir(creds), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(creds, []byte(`{"keys":{"http://127.0.0.1":"spool_saved"}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	data, spoolDir := filepath.Join(m.dir, "spool-data"), filepath.Join(m.dir, "spool-worker")
	secrets := []string{filepath.Join(data, "admin.key"), filepath.Join(data, "token.key"), filepath.Join(data, "spool.db"), creds}
	script := "id -un; pwd; echo HOME=$HOME; ls " + spoolDir
	for _, f := range secrets {
		script += "; cat " + f
	}
	out, _ := m.spool(t, nil, "submit", "-f", "--shell", script)
	printed := m.jobText(t, out)
	want := []string{jobUser + "\n", filepath.Join(spoolDir, "jobs") + "/", "HOME=" + filepath.Join(spoolDir, "jobs"),
		"ls: cannot open directory '" + spoolDir + "': Permission denied"}
	for _, f := range secrets {
		want = append(want, "cat: "+f+": Permission denied")
	}
	for _, w := range want {
		if !strings.Contains(printed, w) {
			t.Errorf("the job's output lacks %q:\n%s", w, printed)
		}
	}

	// A repository the user may read is checked out by the user, into a
	// directory of the user's.
	repo := filepath.Join(m.dir, "repo")
	for _, args := range [][]string{{"init", "-q", repo}, {"-C", repo, "-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-q", "--allow-empty", "-m", "first"}} {
		if b, err := exec.Command("git", args...).CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, b)
		}
	}
	if b, err := exec.Command("chown", "-R", u.Uid+":"+u.Gid, repo).CombinedOutput(); err != nil {
		t.Fatalf("chown: %v\n%s", err, b)
	}
	out, err := m.spool(t, nil, "submit", "-f", "--repo", "file://"+repo, "--shell", "stat -c %U . .git/HEAD; git log --format=%s")
	if err != nil {
		t.Fatalf("a job with --repo: %v\n%s", err, out)
	}
	if printed := m.jobText(t, out); printed != strings.Repeat(jobUser+"\n", 2)+"first\n" {
		t.Errorf("the checkout is not the job user's: %q", printed)
	}
}

// TestRunAsNeedsRoot: `spool worker --run-as` started by a user who is not
// root is refused at once, saying why.
func TestRunAsNeedsRoot(t *testing.T) {
	t.Parallel()
	needRoot(t)
	lookupUser(t, jobUser)
	// The binary's directory is this test run's own; nobody must reach it.
	if err := os.Chmod(filepath.Dir(spoolBin), 0o755); err != nil {
		t.Fatal(err)
	}
	out, err := runAsUser(t, "nobody", spoolBin, "worker", "--run-as", jobUser, "--spool-dir", filepath.Join(sharedDir(t), "worker"))
	want := "spool: --run-as " + jobUser + " needs the worker to run as root (it runs as uid "
	if err == nil || !strings.Contains(out, want) {
		t.Fatalf("spool worker --run-as, as nobody: %v\n%s\nwant it refused: %q", err, out, want)
	}
}
