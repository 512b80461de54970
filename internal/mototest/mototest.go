// Package mototest runs moto_server, a real AWS look-alike (S3,
// CloudWatch Logs, DynamoDB, SQS and more on one port, in memory), for
// tests. A test package gets one server, started on first use and stopped
// when its tests end:
//
//	func TestMain(m *testing.M) { os.Exit(mototest.Main(m)) }
//
//	func TestSomething(t *testing.T) {
//		srv := mototest.Shared(t)
//		client := s3.NewFromConfig(srv.AWSConfig(), ...)
//	}
//
// A package with one such test may start a server of the test's own
// instead (For), stopped when the test ends. A machine without
// moto_server fails such tests with a message saying how to install it;
// they never skip.
package mototest

import (
	"bufio"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"

	"github.com/spool-run/spool/internal/testshare"
)

// Install is how to get moto_server.
const Install = "pip install 'moto[server]==5.2.1'"

// Region is the region the server's clients use.
const Region = "us-east-1"

// startTimeout bounds the wait for the server to say it listens (it takes
// about 3 s).
const startTimeout = 60 * time.Second

// Server is a running moto_server.
type Server struct {
	// URL is the endpoint every service answers on (http://127.0.0.1:PORT).
	URL string

	cmd  *exec.Cmd
	done chan struct{}
	mu   sync.Mutex
	log  strings.Builder
}

// shared is the package's servers, for the tests of the package that
// asks.
var shared = testshare.Shared[*Server]{What: "mototest", Start: Start, Stop: (*Server).Stop, Logs: (*Server).Output}

// Main runs a package's tests (call it from TestMain) and stops the server
// Shared started. It returns m.Run's exit code.
func Main(m interface{ Run() int }) int { return shared.Main(m) }

// Runner is m run by Main, for a TestMain that hands the run to another
// (goleak.VerifyTestMain(mototest.Runner(m))).
func Runner(m *testing.M) interface{ Run() int } { return shared.Runner(m) }

// Shared returns the package's server, started on first use. Tests keep
// apart by their own names (a bucket each: NewName).
func Shared(t testing.TB) *Server {
	t.Helper()
	return shared.Get(t)
}

// For starts a server of t's own, stopped when t ends.
func For(t testing.TB) *Server {
	t.Helper()
	srv, err := Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Stop)
	return srv
}

// SetEnv points the AWS SDK's usual sources at moto for the rest of the
// test: test credentials, region us-east-1, no shared configuration or
// instance role of the machine's, and no endpoint of its own (callers
// give the server's URL). Code that finds AWS as a person's command
// would, through the environment, then finds moto.
func SetEnv(t testing.TB) {
	nowhere := filepath.Join(t.TempDir(), "none")
	for k, v := range map[string]string{
		"AWS_ACCESS_KEY_ID": "test", "AWS_SECRET_ACCESS_KEY": "test", "AWS_SESSION_TOKEN": "",
		"AWS_REGION": Region, "AWS_PROFILE": "", "AWS_CONFIG_FILE": nowhere, "AWS_SHARED_CREDENTIALS_FILE": nowhere,
		"AWS_ENDPOINT_URL": "", "AWS_ENDPOINT_URL_CLOUDWATCH_LOGS": "", "AWS_EC2_METADATA_DISABLED": "true",
	} {
		t.Setenv(k, v)
	}
}

// Start starts a server on a free port. Stop it when done.
func Start() (*Server, error) {
	bin, err := exec.LookPath("moto_server")
	if err != nil {
		return nil, fmt.Errorf("moto_server is not on PATH, and the AWS tests run against it: install it with %s (scripts/test-deps.sh does)", Install)
	}
	var last error
	// A port taken between choosing it and moto binding it makes moto
	// exit; another port is tried.
	for range 3 {
		port, err := freePort()
		if err != nil {
			return nil, err
		}
		s, err := launch(bin, port)
		if err == nil {
			return s, nil
		}
		last = err
	}
	return nil, last
}

func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

// launch starts moto on port and waits for the line saying it listens.
func launch(bin string, port int) (*Server, error) {
	s := &Server{URL: "http://127.0.0.1:" + strconv.Itoa(port), done: make(chan struct{})}
	s.cmd = exec.Command(bin, "-H", "127.0.0.1", "-p", strconv.Itoa(port))
	out, err := s.cmd.StderrPipe()
	if err != nil {
		return nil, err
	}
	s.cmd.Stdout = s.cmd.Stderr
	if err := s.cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting moto_server: %w", err)
	}
	ready := make(chan struct{})
	go func() {
		// moto's web server (werkzeug) says "Running on http://…" once its
		// socket listens; everything it says is kept for a failed test.
		sc := bufio.NewScanner(out)
		said := false
		for sc.Scan() {
			s.mu.Lock()
			s.log.WriteString(sc.Text() + "\n")
			s.mu.Unlock()
			if !said && strings.Contains(sc.Text(), "Running on") {
				said = true
				close(ready)
			}
		}
		_, _ = io.Copy(io.Discard, out)
		_ = s.cmd.Wait()
		close(s.done)
	}()
	select {
	case <-ready:
		return s, nil
	case <-s.done:
		return nil, fmt.Errorf("moto_server exited before it listened on port %d:\n%s", port, s.Output())
	case <-time.After(startTimeout):
		s.Stop()
		return nil, fmt.Errorf("moto_server did not listen on port %d within %v:\n%s", port, startTimeout, s.Output())
	}
}

// Output is what the server has printed.
func (s *Server) Output() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.log.String()
}

// Stop ends the server (by its process id): an interrupt, then a kill if
// it lingers.
func (s *Server) Stop() {
	_ = s.cmd.Process.Signal(os.Interrupt)
	select {
	case <-s.done:
	case <-time.After(5 * time.Second):
		_ = s.cmd.Process.Kill()
		<-s.done
	}
}

// AWSConfig is an SDK configuration that reaches the server: static
// credentials, Region, and BaseEndpoint set to the server. Use it with a
// service client's options (o.UsePathStyle for S3).
func (s *Server) AWSConfig() aws.Config {
	return aws.Config{
		Region:       Region,
		Credentials:  credentials.NewStaticCredentialsProvider("test", "test", ""),
		BaseEndpoint: aws.String(s.URL),
	}
}

// NewName is a name no other test uses, for a bucket, a table or a log
// group: prefix, a dash and 12 hex digits, lower case (as S3 wants).
func NewName(prefix string) string {
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	return prefix + "-" + hex.EncodeToString(b)
}
