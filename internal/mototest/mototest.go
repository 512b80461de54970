// Package mototest starts moto_server, which serves AWS APIs (CloudWatch
// Logs, S3, DynamoDB, SQS) in memory, for tests that need a real AWS
// endpoint on loopback.
package mototest

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// install says how to get moto_server, for a machine that lacks it.
const install = "moto_server is not installed; these tests need it: pip install 'moto[server]==5.2.1'"

// startTimeout bounds moto_server's start-up, which takes about 3 s.
const startTimeout = 60 * time.Second

// Start runs moto_server on a free loopback port until the test ends and
// returns its endpoint URL (http://127.0.0.1:PORT), for the AWS SDK's
// BaseEndpoint with any access key and region us-east-1. The test fails
// when moto_server is missing or does not come up.
func Start(t testing.TB) string {
	t.Helper()
	path, err := exec.LookPath("moto_server")
	if err != nil {
		t.Fatal(install)
	}
	port, err := freePort()
	if err != nil {
		t.Fatalf("finding a free port for moto_server: %v", err)
	}
	cmd := exec.Command(path, "-H", "127.0.0.1", "-p", strconv.Itoa(port))
	// moto_server (werkzeug) says on stderr when it listens: that line is
	// the signal it is ready.
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting moto_server: %v", err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	ready := make(chan error, 1)
	var said strings.Builder
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			line := sc.Text()
			if said.Len() < 4096 {
				said.WriteString(line + "\n")
			}
			if strings.Contains(line, "Running on") {
				ready <- nil
				// Keep draining, or moto_server blocks on a full pipe.
				_, _ = io.Copy(io.Discard, stderr)
				return
			}
		}
		ready <- fmt.Errorf("moto_server exited before it listened: %s", said.String())
	}()
	select {
	case err := <-ready:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(startTimeout):
		t.Fatalf("moto_server did not listen on port %d within %s", port, startTimeout)
	}
	return "http://127.0.0.1:" + strconv.Itoa(port)
}

// freePort is a loopback port that nothing listens on now.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// SetEnv points the AWS SDK's usual sources at moto for the rest of the
// test: test credentials, region us-east-1, no shared configuration or
// instance role of the machine's, and no endpoint of its own (callers
// give the one Start returned). Code that finds AWS as a person's command
// would, through the environment, then finds moto.
func SetEnv(t testing.TB) {
	nowhere := filepath.Join(t.TempDir(), "none")
	for k, v := range map[string]string{
		"AWS_ACCESS_KEY_ID": "test", "AWS_SECRET_ACCESS_KEY": "test", "AWS_SESSION_TOKEN": "",
		"AWS_REGION": "us-east-1", "AWS_PROFILE": "", "AWS_CONFIG_FILE": nowhere, "AWS_SHARED_CREDENTIALS_FILE": nowhere,
		"AWS_ENDPOINT_URL": "", "AWS_ENDPOINT_URL_CLOUDWATCH_LOGS": "", "AWS_EC2_METADATA_DISABLED": "true",
	} {
		t.Setenv(k, v)
	}
}
