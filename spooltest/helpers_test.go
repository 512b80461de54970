package spooltest_test

import (
	"fmt"
	"os"
	"runtime"
	"slices"
	"sync"
	"testing"
)

// exampleTB stands in for a test's *testing.T in the examples, which have
// none: a failure panics, so the example fails loudly.
type exampleTB struct {
	testing.TB // not set: a method it does not have would panic
	mu         sync.Mutex
	cleanups   []func()
}

func exampleT() *exampleTB { return &exampleTB{} }

func (t *exampleTB) Helper()                           {}
func (t *exampleTB) Name() string                      { return "Example" }
func (t *exampleTB) Log(args ...any)                   {}
func (t *exampleTB) Logf(format string, args ...any)   {}
func (t *exampleTB) Error(args ...any)                 { panic(fmt.Sprint(args...)) }
func (t *exampleTB) Errorf(format string, args ...any) { panic(fmt.Sprintf(format, args...)) }
func (t *exampleTB) Fatal(args ...any)                 { panic(fmt.Sprint(args...)) }
func (t *exampleTB) Fatalf(format string, args ...any) { panic(fmt.Sprintf(format, args...)) }

func (t *exampleTB) Cleanup(f func()) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.cleanups = append(t.cleanups, f)
}

func (t *exampleTB) TempDir() string {
	dir, err := os.MkdirTemp("", "spooltest-example-")
	if err != nil {
		panic(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	return dir
}

// end runs the cleanups, last registered first, as a test's end does.
func (t *exampleTB) end() {
	t.mu.Lock()
	fs := slices.Clone(t.cleanups)
	t.mu.Unlock()
	for _, f := range slices.Backward(fs) {
		f()
	}
}

// recorder is a testing.TB that records what fails the test instead of
// failing it, to test the assertions themselves. Like a test, it stops the
// goroutine that failed.
type recorder struct {
	testing.TB // not set
	failure    string
}

func (r *recorder) Helper() {}

func (r *recorder) Fatalf(format string, args ...any) {
	r.failure = fmt.Sprintf(format, args...)
	runtime.Goexit()
}

// failure runs check with a recorder, as a test would run it, and returns
// why it failed the test ("" when it did not).
func failure(check func(testing.TB)) string {
	r := &recorder{}
	done := make(chan struct{})
	go func() {
		defer close(done)
		check(r)
	}()
	<-done
	return r.failure
}
