package client

import (
	"errors"
	"fmt"
	"io"
	"syscall"
	"testing"
	"time"

	"connectrpc.com/connect"
)

func TestIsTransient(t *testing.T) {
	cases := map[error]bool{
		connect.NewError(connect.CodeUnavailable, errors.New("server is shutting down")):              true,
		connect.NewError(connect.CodeDeadlineExceeded, errors.New("transport timeout")):               true,
		connect.NewError(connect.CodeResourceExhausted, errors.New("throttled")):                      true,
		connect.NewError(connect.CodeInternal, fmt.Errorf("protocol error: %w", io.ErrUnexpectedEOF)): true,
		connect.NewError(connect.CodeCanceled, fmt.Errorf("read: %w", syscall.ECONNRESET)):            true,
		connect.NewError(connect.CodeNotFound, errors.New("no such job")):                             false,
		connect.NewError(connect.CodeInvalidArgument, errors.New("bad")):                              false,
		connect.NewError(connect.CodePermissionDenied, errors.New("no")):                              false,
		connect.NewError(connect.CodeInternal, errors.New("store failed")):                            false,
	}
	for err, want := range cases {
		if got := isTransient(err); got != want {
			t.Errorf("isTransient(%v) = %v, want %v", err, got, want)
		}
	}
}

func TestRetrierGivesUpWithoutProgress(t *testing.T) {
	r := newRetrier(Reconnect{First: time.Millisecond, Max: 4 * time.Millisecond, GiveUpAfter: 50 * time.Millisecond})
	for i := range 4 {
		if wait, ok := r.next(); !ok || wait > 4*time.Millisecond {
			t.Fatalf("pause %d: %v %v", i, wait, ok)
		}
	}
	time.Sleep(60 * time.Millisecond)
	if _, ok := r.next(); ok {
		t.Fatal("still retrying after GiveUpAfter without progress")
	}
	r.progress()
	if wait, ok := r.next(); !ok || wait > time.Millisecond {
		t.Fatalf("after progress: %v %v, want the first pause again", wait, ok)
	}

	never := newRetrier(Reconnect{First: time.Millisecond, GiveUpAfter: -1})
	never.since = time.Now().Add(-24 * time.Hour)
	if _, ok := never.next(); !ok {
		t.Fatal("a negative GiveUpAfter gave up")
	}
}
