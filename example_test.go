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
	// Output: [queued running succeeded failed cancelled]
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
