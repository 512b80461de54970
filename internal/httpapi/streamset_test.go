package httpapi

import (
	"sync"
	"testing"
)

// Streams that arrive while the server waits for the running ones are
// refused, and the wait returns once the running ones leave.
func TestStreamSetWaitRefusesLateStreams(t *testing.T) {
	t.Parallel()
	var s streamSet
	if !s.join() {
		t.Fatal("join refused before any wait")
	}
	waited := make(chan struct{})
	go func() { s.wait(); close(waited) }()

	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			if s.join() {
				s.leave()
			}
		})
	}
	wg.Wait()
	select {
	case <-waited:
		t.Fatal("wait returned while a stream was running")
	default:
	}
	s.leave()
	<-waited
	if s.join() {
		t.Fatal("join accepted a stream after the wait")
	}
	s.wait() // a second wait returns at once
}
