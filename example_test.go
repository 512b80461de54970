package spool_test

import (
	"errors"
	"fmt"

	"github.com/spool-run/spool"
)

// A flag or query string names states; the job's state says whether it
// has ended.
func ExampleParseStates() {
	states, err := spool.ParseStates("queued,running", "FAILED")
	fmt.Println(states, err)
	for _, s := range states {
		fmt.Println(s, s.IsFinal())
	}
	_, err = spool.ParseStates("done")
	fmt.Println(errors.Is(err, spool.ErrInvalidArgument))
	// Output:
	// [queued running failed] <nil>
	// queued false
	// running false
	// failed true
	// true
}

func ExampleStates() {
	fmt.Println(spool.States())
	// Output: [scheduled queued running succeeded failed cancelled]
}

// A delayed job, or one waiting for others, is scheduled: live, not
// final.
func ExampleState_IsFinal() {
	fmt.Println(spool.Scheduled, spool.Scheduled.IsFinal(), spool.Cancelled.IsFinal())
	// Output: scheduled false true
}

// A schedule's policies are named as the command line names them, and
// the wire's names are read too.
func ExampleParseMissed() {
	m, err := spool.ParseMissed("MISSED_RUN_ONCE")
	fmt.Println(m, m == spool.MissedRunOnce, err)
	o, _ := spool.ParseOverlap("Skip")
	fmt.Println(o)
	_, err = spool.ParseOverlap("never")
	fmt.Println(err)
	// Output:
	// run-once true <nil>
	// skip
	// invalid argument: "never" is not an overlap policy; use allow, skip
}

func ExampleParseRole() {
	r, err := spool.ParseRole("Worker")
	fmt.Println(r, r == spool.RoleWorker, err)
	_, err = spool.ParseRole("root")
	fmt.Println(err)
	// Output:
	// worker true <nil>
	// invalid argument: "root" is not a role; use admin, submit, read, worker, ingest
}

func ExampleScatterState_IsFinal() {
	fmt.Println(spool.ScatterGathering, spool.ScatterGathering.IsFinal(), spool.ScatterFailed.IsFinal())
	// Output: gathering false true
}

// Code that maps each kind of error to something else lists them all.
func ExampleKinds() {
	for _, kind := range spool.Kinds()[:3] {
		fmt.Println(kind)
	}
	// Output:
	// invalid argument
	// not found
	// already exists
}
