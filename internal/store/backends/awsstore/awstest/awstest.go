// Package awstest runs the AWS backend's tests against real servers: a
// DynamoDB-compatible server (npm dynalite) and an SQS-compatible one (npm
// local-aws-sqs), started as child processes on free loopback ports from
// the packages test/aws pins. Any package's tests can use it:
//
//	func TestMain(m *testing.M) { os.Exit(awstest.Main(m)) }
//
//	func TestSomething(t *testing.T) {
//		cfg := awstest.Shared(t).NewConfig(t) // fresh tables and queue names
//		s, err := awsstore.Open(ctx, cfg)
//		…
//	}
//
// Start(t) gives a test servers of its own instead. Missing node or
// packages fail the test, saying how to install them: these tests never
// skip.
package awstest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/spool-run/spool/internal/testshare"
)

// Servers are a running DynamoDB-compatible and SQS-compatible server.
type Servers struct {
	DynamoDB string // endpoint URL, http://127.0.0.1:PORT
	SQS      string

	procs []*proc
}

// install is what to tell someone whose machine lacks the servers.
const install = "run `make test`, or `npm ci --prefix test/aws`"

// startTimeout bounds the wait for a server to answer.
const startTimeout = 30 * time.Second

// Start starts servers for t, stopped when t ends.
func Start(t testing.TB) *Servers {
	t.Helper()
	s, err := start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Log(s.logs())
		}
		s.Stop()
	})
	return s
}

// shared is the package's servers, for the tests of the package that
// asks.
var shared = testshare.Shared[*Servers]{What: "awstest", Start: start, Stop: (*Servers).Stop, Logs: (*Servers).logs}

// Main runs a package's tests (call it from TestMain) and stops the
// servers Shared started. It returns m.Run's exit code.
func Main(m *testing.M) int { return shared.Main(m) }

// Runner is m run by Main: for a TestMain that hands the run to another
// (goleak.VerifyTestMain(awstest.Runner(m))).
func Runner(m *testing.M) interface{ Run() int } { return shared.Runner(m) }

// Shared returns servers shared by all the tests of the package, started
// on first use. The package's TestMain must run awstest.Main, which stops
// them; tests keep apart by using fresh tables and queues (NewConfig).
func Shared(t testing.TB) *Servers {
	t.Helper()
	return shared.Get(t)
}

// Stop ends the servers.
func (s *Servers) Stop() {
	for _, p := range s.procs {
		p.stop()
	}
}

func (s *Servers) logs() string {
	var b bytes.Buffer
	for _, p := range s.procs {
		fmt.Fprintf(&b, "--- %s output:\n%s\n", p.name, p.output())
	}
	return b.String()
}

// start starts both servers.
func start() (*Servers, error) {
	dir, err := packageDir()
	if err != nil {
		return nil, err
	}
	node, err := exec.LookPath("node")
	if err != nil {
		return nil, fmt.Errorf("node is not on PATH, so the DynamoDB and SQS test servers cannot run: install Node.js 20, then %s", install)
	}
	for _, f := range []string{"node_modules/dynalite/cli.js", "node_modules/local-aws-sqs/package.json"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			return nil, fmt.Errorf("the test servers are not installed (%s is missing): %s (with Node.js 20)", filepath.Join(dir, f), install)
		}
	}
	s := &Servers{}
	dyn, err := launch("dynalite", dir, func(port int) []string {
		// dynalite throws, and so exits, when a client drops a request
		// half-way (its request error handler rethrows), which is what a
		// spool server stopped by a test does to its in-flight calls. A
		// real DynamoDB shrugs that off, so the test server must too.
		js := fmt.Sprintf(`process.on('uncaughtException', e => {
  if (e && (e.code === 'ECONNRESET' || e.message === 'aborted')) return;
  console.error(e); process.exit(1);
});
const server = require('dynalite')({createTableMs: 0, deleteTableMs: 0, updateTableMs: 0});
server.listen(%d, '127.0.0.1', () => console.log('Dynalite listening at: http://127.0.0.1:%d'));`, port, port)
		return []string{node, "-e", js}
	})
	if err != nil {
		return nil, err
	}
	s.procs = append(s.procs, dyn)
	sqs, err := launch("local-aws-sqs", dir, func(port int) []string {
		// Queue names are reused across test runs only by accident, but
		// AWS's 60 s wait before re-creating one would make that fail.
		//
		// SQS answers a long poll as soon as any message is ready;
		// local-aws-sqs holds it until it has MaxNumberOfMessages or the
		// wait is over, so a worker asking for ten jobs while two wait
		// would sit out its whole 20 s wait. Each queue's receive is
		// made to answer as SQS does: a receive that does not wait, again
		// every 20 ms, until one finds a message or the wait is over.
		js := fmt.Sprintf(`const http = require('http');
const {createRequestHandler} = require('local-aws-sqs');
const {requestHandler, service} = createRequestHandler({port: %[1]d, hostname: '127.0.0.1', emulateQueueCreationLifecycle: false});
const answerEarly = q => {
  const proto = Object.getPrototypeOf(q);
  if (proto.spoolAnswersEarly) return;
  const receive = proto.receive;
  proto.receive = async function (args) {
    const wait = Number(args.WaitTimeSeconds != null ? args.WaitTimeSeconds : this.ReceiveMessageWaitTimeSeconds) || 0;
    const deadline = Date.now() + wait * 1000;
    for (;;) {
      const got = await receive.call(this, {...args, WaitTimeSeconds: 0});
      if (got.length > 0 || Date.now() >= deadline) return got;
      await new Promise(r => setTimeout(r, 20));
    }
  };
  proto.spoolAnswersEarly = true;
};
http.createServer((req, res) => {
  service.Queues.forEach(answerEarly);
  requestHandler(req, res);
}).listen(%[1]d, '127.0.0.1', () => { service.PORT = %[1]d; console.log('SQS listening at: http://127.0.0.1:%[1]d'); });`, port)
		return []string{node, "-e", js}
	})
	if err != nil {
		s.Stop()
		return nil, err
	}
	s.procs = append(s.procs, sqs)
	s.DynamoDB, s.SQS = dyn.url, sqs.url
	return s, nil
}

// packageDir finds test/aws from the module root, found by walking up from
// the working directory (a package's directory under `go test`).
func packageDir() (string, error) {
	wd, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for d := wd; ; d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
			return filepath.Join(d, "test", "aws"), nil
		}
		if filepath.Dir(d) == d {
			return "", fmt.Errorf("no go.mod above %s: run the tests inside the spool module", wd)
		}
	}
}

// proc is a running server.
type proc struct {
	name string
	url  string
	cmd  *exec.Cmd
	done chan struct{}
	mu   sync.Mutex
	out  bytes.Buffer
}

func (p *proc) Write(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.out.Write(b)
}

func (p *proc) output() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.out.String()
}

// stop ends the server: SIGTERM, then SIGKILL if it lingers.
func (p *proc) stop() {
	_ = p.cmd.Process.Signal(os.Interrupt)
	select {
	case <-p.done:
	case <-time.After(3 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.done
	}
}

// launch starts a server on a free port and waits until it answers HTTP.
// A port taken between choosing and binding it makes the server exit; it
// is then started again on another.
func launch(name, dir string, argv func(port int) []string) (*proc, error) {
	var lastErr error
	for range 3 {
		port, err := freePort()
		if err != nil {
			return nil, err
		}
		args := argv(port)
		p := &proc{name: name, url: fmt.Sprintf("http://127.0.0.1:%d", port), done: make(chan struct{})}
		p.cmd = exec.Command(args[0], args[1:]...)
		p.cmd.Dir = dir
		p.cmd.Stdout, p.cmd.Stderr = p, p
		if err := p.cmd.Start(); err != nil {
			return nil, fmt.Errorf("start %s: %w", name, err)
		}
		go func() {
			_ = p.cmd.Wait()
			close(p.done)
		}()
		if lastErr = p.waitReady(); lastErr == nil {
			return p, nil
		}
		p.stop()
	}
	return nil, lastErr
}

// waitReady waits until the server answers any HTTP request.
func (p *proc) waitReady() error {
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	client := &http.Client{Timeout: time.Second}
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, p.url, nil)
		resp, err := client.Do(req)
		if err == nil {
			resp.Body.Close()
			return nil
		}
		select {
		case <-p.done:
			return fmt.Errorf("%s exited before answering: %s", p.name, p.output())
		case <-ctx.Done():
			return fmt.Errorf("%s did not answer on %s within %v: %s", p.name, p.url, startTimeout, p.output())
		case <-time.After(20 * time.Millisecond):
		}
	}
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("find a free port: %w", err)
	}
	defer l.Close()
	addr, ok := l.Addr().(*net.TCPAddr)
	if !ok {
		return 0, errors.New("find a free port: not a TCP address")
	}
	return addr.Port, nil
}
