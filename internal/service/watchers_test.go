package service

import (
	"testing"
	"time"
)

// Waiting on a job's watched state keeps nothing once the waiters are gone,
// whether the state flipped or not: a server long-polling many heartbeats
// does not grow.
func TestWatchersKeepNothingForGoneWaiters(t *testing.T) {
	var w watchers
	ch1, done1 := w.changes("a")
	_, done2 := w.changes("a")
	_, done3 := w.changes("b")
	if w.pending() != 2 {
		t.Fatalf("%d jobs with waiters, want 2", w.pending())
	}
	remove := w.add("a") // a is watched now: its waiters wake
	select {
	case <-ch1:
	default:
		t.Fatal("a waiter was not woken when the job became watched")
	}
	done1()
	done2()
	done3()
	done3() // twice does no harm
	if w.pending() != 0 {
		t.Fatalf("%d jobs still have waiters after all left", w.pending())
	}
	if !w.watched("a") || w.watched("b") {
		t.Fatal("watched state wrong")
	}
	remove()
	if w.watched("a") || w.total() != 0 {
		t.Fatal("a follower that left still counts")
	}
}

// A poll keeps its job watched, as one follower however many poll, until
// the last poll's time is over; the workers waiting on the job hear both
// flips, and the followers' count leaves pollers out.
func TestPollKeepsWatchedForAWhile(t *testing.T) {
	var w watchers
	const d = 2 * time.Second
	began := time.Now()
	w.polled("a", d)
	flip, done := w.changes("a")
	defer done()
	if !w.watched("a") || w.watched("b") || w.total() != 0 {
		t.Fatalf("after a poll: watched %v, b %v, followers %d", w.watched("a"), w.watched("b"), w.total())
	}
	remove := w.add("a") // a follower too
	if w.total() != 1 {
		t.Fatalf("followers %d, want the one following", w.total())
	}
	remove()
	time.Sleep(d / 4)
	w.polled("a", d) // pushes the end back to d/4+d at least
	// Between the first poll's end and the second's: still watched.
	time.Sleep(time.Until(began.Add(d + d/8)))
	select {
	case <-flip:
		t.Fatalf("the watch ended by %v after the first poll, though a second came in time", time.Since(began))
	default:
	}
	select {
	case <-flip:
	case <-time.After(time.Minute):
		t.Fatal("the watch never ended")
	}
	if took := time.Since(began); w.watched("a") || took < d/4+d {
		t.Fatalf("after the polls stopped: watched %v, ended %v after the first (want at least %v)", w.watched("a"), took, d/4+d)
	}
}
