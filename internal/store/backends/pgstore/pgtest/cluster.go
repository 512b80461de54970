package pgtest

import (
	"errors"
	"fmt"
	"net"
	"os"
	osexec "os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
)

// Cluster is a PostgreSQL server of the test's own, which the test may
// stop, start and restart to see what spool does while its database is
// away. (The shared test server must never be stopped: other tests use it.)
type Cluster struct {
	bin, dir string
	port     int
	// as runs a command as the cluster's owner: PostgreSQL refuses to run
	// as root.
	as []string
}

// NewCluster creates and starts a private cluster in a temporary
// directory, on a free port of 127.0.0.1, stopped and removed when the test
// ends. It needs PostgreSQL's server programs (initdb, pg_ctl): the test
// fails, saying how to install them, when they are missing.
func NewCluster(t testing.TB) *Cluster {
	t.Helper()
	bin := serverBin()
	if bin == "" {
		t.Fatal("no PostgreSQL server programs (initdb, pg_ctl) under /usr/lib/postgresql/*/bin: " +
			"install them (`apt-get install postgresql`; scripts/test-postgres.sh does it when `make test` runs)")
	}
	dir, err := os.MkdirTemp("", "spool-pgtest-")
	if err != nil {
		t.Fatal(err)
	}
	c := &Cluster{bin: bin, dir: dir}
	if os.Getuid() == 0 {
		if err := os.Chown(dir, 65534, 65534); err != nil { // nobody
			t.Fatalf("private PostgreSQL cluster: give %s to nobody: %v", dir, err)
		}
		c.as = []string{"runuser", "-u", "nobody", "--"}
	}
	t.Cleanup(func() {
		_ = c.ctl("stop", "-m", "immediate")
		_ = os.RemoveAll(dir)
	})
	if out, err := c.command("initdb", "-D", c.data(), "-U", "postgres", "--auth=trust", "-E", "UTF8").CombinedOutput(); err != nil {
		t.Fatalf("private PostgreSQL cluster: initdb: %v\n%s", err, out)
	}
	// A port another process may take between the check and the bind:
	// try the next free one then.
	for try := 1; ; try++ {
		c.port = freePort(t)
		// In the configuration file, not on pg_ctl's command line, so a
		// start after a stop finds the same port.
		settings := fmt.Sprintf("\nport = %d\nunix_socket_directories = '%s'\nlisten_addresses = '127.0.0.1'\nfsync = off\nmax_connections = 200\n", c.port, dir)
		if err := appendFile(filepath.Join(c.data(), "postgresql.conf"), settings); err != nil {
			t.Fatalf("private PostgreSQL cluster: %v", err)
		}
		err := c.ctl("start")
		if err == nil {
			return c
		}
		if try == 3 {
			log, _ := os.ReadFile(c.log())
			t.Fatalf("private PostgreSQL cluster: %v\n%s", err, log)
		}
	}
}

// URL is the cluster's postgres database, as its superuser.
func (c *Cluster) URL() string {
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable", c.port)
}

// Stop stops the cluster the way an operator does (pg_ctl stop -m fast:
// open connections are cut, transactions in flight rolled back).
func (c *Cluster) Stop(t testing.TB) {
	t.Helper()
	if err := c.ctl("stop", "-m", "fast"); err != nil {
		t.Fatalf("stop the private PostgreSQL cluster: %v", err)
	}
}

// Start starts a stopped cluster again, on the same port.
func (c *Cluster) Start(t testing.TB) {
	t.Helper()
	if err := c.ctl("start"); err != nil {
		log, _ := os.ReadFile(c.log())
		t.Fatalf("start the private PostgreSQL cluster again: %v\n%s", err, log)
	}
}

// Restart restarts the cluster as a crash would (pg_ctl restart -m
// immediate: no clean shutdown, recovery at start).
func (c *Cluster) Restart(t testing.TB) {
	t.Helper()
	if err := c.ctl("restart", "-m", "immediate"); err != nil {
		log, _ := os.ReadFile(c.log())
		t.Fatalf("restart the private PostgreSQL cluster: %v\n%s", err, log)
	}
}

// ctl runs pg_ctl on the cluster, waiting for it to finish what it does.
func (c *Cluster) ctl(args ...string) error {
	args = append([]string{"-D", c.data(), "-l", c.log(), "-w", "-t", "60"}, args...)
	if out, err := c.command("pg_ctl", args...).CombinedOutput(); err != nil {
		return fmt.Errorf("pg_ctl %v: %w\n%s", args, err, out)
	}
	return nil
}

func (c *Cluster) command(prog string, args ...string) *osexec.Cmd {
	argv := append(slices.Clone(c.as), append([]string{filepath.Join(c.bin, prog)}, args...)...)
	return osexec.Command(argv[0], argv[1:]...)
}

func (c *Cluster) data() string { return filepath.Join(c.dir, "data") }
func (c *Cluster) log() string  { return filepath.Join(c.dir, "server.log") }

// serverBin is the newest installed PostgreSQL's directory of programs.
func serverBin() string {
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	slices.SortFunc(dirs, func(a, b string) int {
		return versionOf(a) - versionOf(b)
	})
	for _, d := range slices.Backward(dirs) {
		if _, err := os.Stat(filepath.Join(d, "initdb")); err == nil {
			return d
		}
	}
	return ""
}

// versionOf is the major version in a /usr/lib/postgresql/N/bin path.
func versionOf(bin string) int {
	n, _ := strconv.Atoi(filepath.Base(filepath.Dir(bin)))
	return n
}

// appendFile adds text at the end of the file at path; later settings of
// a PostgreSQL configuration file win over earlier ones.
func appendFile(path, text string) error {
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	_, err = f.WriteString(text)
	return errors.Join(err, f.Close())
}

func freePort(t testing.TB) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}
