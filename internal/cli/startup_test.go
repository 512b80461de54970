package cli

import (
	"bytes"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spool-run/spool/spooltest"
)

// runLocal runs spool with args as a shell would, without pointing it at a
// server: for the commands that are one.
func runLocal(args ...string) result {
	var out, errOut bytes.Buffer
	code := Main(args, strings.NewReader(""), &out, &errOut)
	return result{code: code, stdout: out.String(), stderr: errOut.String()}
}

// aFile is the path of a file (not a directory) in a temporary directory.
func aFile(t *testing.T) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "x")
	if err := os.WriteFile(p, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// wantRefusal fails unless r failed with exactly the message want, and
// does not blame the network for a problem on this machine.
func wantRefusal(t *testing.T, what string, r result, want string) {
	t.Helper()
	if r.code != 1 || r.stderr != "spool: "+want+"\n" {
		t.Errorf("%s: exit %d, stderr %q; want exit 1 and %q", what, r.code, r.stderr, "spool: "+want+"\n")
	}
}

// TestStartupErrorsNameTheSetting: spool server and spool worker say which
// setting is wrong and why, instead of blaming an unreachable server.
func TestStartupErrorsNameTheSetting(t *testing.T) {
	file := aFile(t)
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	addr := busy.Addr().String()
	missing := filepath.Join(t.TempDir(), "spool.yaml")
	// A data directory yet to be made: one made already with another mode
	// would be narrowed, and that said before the refusal.
	newDir := func() string { return filepath.Join(t.TempDir(), "data") }

	wantRefusal(t, "data dir is a file", runLocal("server", "--addr", "127.0.0.1:0", "--data-dir", file),
		"--data-dir "+file+" is a file, not a directory: choose another --data-dir")
	wantRefusal(t, "data dir under a file", runLocal("server", "--addr", "127.0.0.1:0", "--data-dir", file+"/data"),
		"--data-dir "+file+"/data: a part of that path is a file, not a directory: choose another --data-dir")
	wantRefusal(t, "port in use", runLocal("server", "--addr", addr, "--data-dir", newDir()),
		"--addr "+addr+" is in use by another program: stop it or choose another --addr")
	wantRefusal(t, "missing config", runLocal("server", "--config", missing),
		"--config "+missing+": no such file")
	wantRefusal(t, "missing config for aws init", runLocal("aws", "init", "--config", missing),
		"--config "+missing+": no such file")
	wantRefusal(t, "spool dir is a file", runLocal("worker", "--server", "http://127.0.0.1:1", "--spool-dir", file),
		"--spool-dir "+file+" is a file, not a directory: choose another --spool-dir")
	wantRefusal(t, "metrics port in use", runLocal("worker", "--server", "http://127.0.0.1:1", "--spool-dir", t.TempDir(), "--metrics-addr", addr),
		"--metrics-addr "+addr+" is in use by another program: stop it or choose another --metrics-addr")

	// The same settings given by environment variable or in the file are
	// named that way.
	t.Setenv("SPOOL_SERVER_DATA_DIR", file)
	wantRefusal(t, "data dir from the environment", runLocal("server", "--addr", "127.0.0.1:0"),
		"SPOOL_SERVER_DATA_DIR "+file+" is a file, not a directory: choose another SPOOL_SERVER_DATA_DIR")
	os.Unsetenv("SPOOL_SERVER_DATA_DIR")
	if err := os.WriteFile(missing, []byte("server:\n  addr: "+addr+"\n  data_dir: "+newDir()+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	wantRefusal(t, "address from the file", runLocal("server", "--config", missing),
		"server.addr (in "+missing+") "+addr+" is in use by another program: stop it or choose another server.addr (in "+missing+")")
}

// TestUnreachableServer: a client command that cannot reach the server
// says so, tries again for a while (a server restarting is back soon),
// then says where it looked and why the connection failed.
func TestUnreachableServer(t *testing.T) {
	t.Parallel()
	dead, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	url := "http://" + dead.Addr().String()
	dead.Close()
	start := time.Now()
	r := runLocal("--server", url, "jobs", "list")
	refused := "dial tcp " + dead.Addr().String() + ": connect: connection refused"
	want := "spool: the server at " + url + " did not serve the call (" + refused + "); trying again for up to 10s\n" +
		"spool: cannot reach the spool server at " + url + " (" + refused + ").\n"
	if r.code != 1 || !strings.HasPrefix(r.stderr, want) {
		t.Fatalf("exit %d, stderr %q; want it to start %q", r.code, r.stderr, want)
	}
	if took := time.Since(start); took < 5*time.Second {
		t.Fatalf("gave up after %v: the call was not tried again for long", took)
	}
}

// TestUnknownEnvironmentVariable: spool server warns about a SPOOL_
// variable that is no setting, naming the one probably meant.
func TestUnknownEnvironmentVariable(t *testing.T) {
	t.Setenv("SPOOL_JOBS_MAX_ATEMPTS", "5")
	r := runLocal("server", "--addr", "127.0.0.1:0", "--data-dir", aFile(t))
	if !strings.Contains(r.stderr, "SPOOL_JOBS_MAX_ATEMPTS is not a spool setting and is ignored; did you mean SPOOL_JOBS_MAX_ATTEMPTS?") {
		t.Fatalf("stderr %q", r.stderr)
	}
}

// TestWorkerFlags: flags a worker cannot work with are refused before it
// starts, and a lease the server will not grant ends the worker with the
// server's reason instead of a loop of warnings.
func TestWorkerFlags(t *testing.T) {
	srv := spooltest.NewServer(t)
	dir := t.TempDir()
	// Each runs in the background, so that a worker which wrongly starts
	// fails the test instead of running until it times out.
	wantRefusal(t, "concurrency 0", await(t, start(srv, "worker", "--spool-dir", dir, "--concurrency", "0")), "--concurrency must be at least 1, got 0")
	wantRefusal(t, "lease 1", await(t, start(srv, "worker", "--spool-dir", dir, "--lease", "1")),
		"--lease 1s is too short: the shortest lease is 2s (the worker renews it every half lease)")
	r := await(t, start(srv, "worker", "--spool-dir", dir, "--lease", "13h"))
	want := "spool: --lease 13h0m0s is refused by the server: visibility_timeout_seconds must be between 2 and 43200, got 46800\n"
	if r.code != 1 || !strings.HasSuffix(r.stderr, want) {
		t.Fatalf("lease over what the server grants: exit %d, stderr %q; want it to end %q", r.code, r.stderr, want)
	}
}
