package service

import "testing"

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
