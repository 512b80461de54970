package testshare

import (
	"errors"
	"testing"
)

type fakeRun func() int

func (f fakeRun) Run() int { return f() }

// One server for the whole run, whatever number of tests ask, stopped
// once at its end; a server that never started is not stopped.
func TestStartedOnceStoppedOnce(t *testing.T) {
	starts, stops := 0, 0
	s := &Shared[int]{What: "test", Start: func() (int, error) { starts++; return 42, nil }, Stop: func(n int) {
		if n != 42 {
			t.Errorf("stopped server %d", n)
		}
		stops++
	}}
	code := s.Main(fakeRun(func() int {
		for range 3 {
			if got := s.Get(t); got != 42 {
				t.Errorf("Get = %d", got)
			}
		}
		if stops != 0 {
			t.Error("stopped while tests run")
		}
		return 7
	}))
	if code != 7 || starts != 1 || stops != 1 {
		t.Fatalf("exit %d, %d starts, %d stops; want 7, 1, 1", code, starts, stops)
	}

	idle := &Shared[int]{What: "idle", Start: func() (int, error) { return 0, errors.New("never asked") }, Stop: func(int) { t.Error("stopped a server never started") }}
	if code := idle.Main(fakeRun(func() int { return 0 })); code != 0 {
		t.Fatalf("exit %d", code)
	}
}
