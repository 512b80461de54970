// Package testshare keeps one test server (or set of servers) per test
// package: started by the first test that asks for it, shared by the
// package's tests, which keep apart by names of their own, and stopped
// when the package's tests end. Starting one per test would cost seconds
// a test; leaving it running would leak a process per package.
//
//	var servers = testshare.Shared[*Server]{What: "mototest", Start: start, Stop: (*Server).Stop, Logs: (*Server).Output}
//
//	func TestMain(m *testing.M) { os.Exit(servers.Main(m)) }
//	func TestX(t *testing.T) { srv := servers.Get(t) }
package testshare

import (
	"fmt"
	"os"
	"sync"
	"testing"
)

// Shared is a package's shared server of type S.
type Shared[S any] struct {
	// What names the helper, for the message of a package that forgot
	// its TestMain.
	What string
	// Start starts the server; Stop stops it; Logs, when set, is what it
	// printed, shown when the package's tests failed.
	Start func() (S, error)
	Stop  func(S)
	Logs  func(S) string

	mu      sync.Mutex
	inMain  bool
	started bool
	srv     S
	err     error
}

// Main runs a package's tests (call it from TestMain) and stops the server
// Get started. It returns m.Run's exit code.
func (s *Shared[S]) Main(m interface{ Run() int }) int {
	s.mu.Lock()
	s.inMain = true
	s.mu.Unlock()
	code := m.Run()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.started && s.err == nil {
		if code != 0 && s.Logs != nil {
			fmt.Fprintf(os.Stderr, "--- %s's server output:\n%s\n", s.What, s.Logs(s.srv))
		}
		s.Stop(s.srv)
	}
	return code
}

// Runner is m run by Main, for a TestMain that hands the run to another
// (goleak.VerifyTestMain(servers.Runner(m))).
func (s *Shared[S]) Runner(m *testing.M) interface{ Run() int } { return runner[S]{s, m} }

type runner[S any] struct {
	s *Shared[S]
	m *testing.M
}

func (r runner[S]) Run() int { return r.s.Main(r.m) }

// Get returns the package's server, started on first use; a server that
// could not start fails every test that asks for it.
func (s *Shared[S]) Get(t testing.TB) S {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.inMain {
		t.Fatalf("%s: the package's TestMain must run Main, which stops the shared server", s.What)
	}
	if !s.started {
		s.started = true
		s.srv, s.err = s.Start()
	}
	if s.err != nil {
		t.Fatal(s.err)
	}
	return s.srv
}
