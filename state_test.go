package spool

import (
	"encoding/json"
	"errors"
	"testing"
)

// Every state, role and scatter state has a name that parses back to it,
// and JSON carries the name.
func TestNamesRoundTrip(t *testing.T) {
	for _, s := range States() {
		got, err := ParseState(s.String())
		if err != nil || got != s {
			t.Errorf("ParseState(%q) = %v, %v", s, got, err)
		}
		b, _ := json.Marshal(s)
		var back State
		if err := json.Unmarshal(b, &back); err != nil || back != s || string(b) != `"`+s.String()+`"` {
			t.Errorf("%v in JSON: %s, back %v, %v", s, b, back, err)
		}
	}
	for _, r := range Roles() {
		got, err := ParseRole("KEY_ROLE_" + r.String())
		if err != nil || got != r {
			t.Errorf("ParseRole of %v's wire name = %v, %v", r, got, err)
		}
	}
	if got, err := ParseState(" JOB_STATE_RUNNING "); got != Running || err != nil {
		t.Errorf("the wire name parses to %v, %v", got, err)
	}
	if s := State(0).String(); s != "unspecified" {
		t.Errorf("the zero state is %q", s)
	}
	if s := State(42).String(); s != "State(42)" {
		t.Errorf("an unknown state is %q", s)
	}
}

// A name that is no state is an invalid argument that names the choices.
func TestParseStateRefuses(t *testing.T) {
	_, err := ParseStates("queued,done")
	if !errors.Is(err, ErrInvalidArgument) || err.Error() != `invalid argument: "done" is not a job state; use scheduled, queued, running, succeeded, failed, cancelled` {
		t.Fatalf("err = %v", err)
	}
	var s State
	if err := s.UnmarshalText([]byte("nope")); !errors.Is(err, ErrInvalidArgument) {
		t.Fatalf("UnmarshalText: %v", err)
	}
}

// The lists are the caller's to change.
func TestListsAreFresh(t *testing.T) {
	States()[0] = Cancelled
	Roles()[0] = RoleIngest
	Kinds()[0] = nil
	if States()[0] != Scheduled || Roles()[0] != RoleAdmin || Kinds()[0] != ErrInvalidArgument {
		t.Fatal("a caller changed a list for everyone")
	}
}
