package ingest

import (
	"errors"
	"fmt"
	"strconv"
)

// ErrMalformed is wrapped by the error of a decoder when the input does
// not follow its format. Sending the same input again cannot succeed.
var ErrMalformed = errors.New("malformed input")

// ErrTooLarge is wrapped by the error of a decoder when the input is over
// one of the Limits: it may be fine, only too large to take at once.
var ErrTooLarge = errors.New("input over a limit")

// inputError is an error about the input: its message says where and what
// is wrong, without the text of the sentinel (which would only repeat it),
// while errors.Is still finds the sentinel and errors.As the cause.
type inputError struct {
	kind  error  // ErrMalformed or ErrTooLarge
	place string // where: "record 3, event 7", "line 4"; empty for the whole body
	msg   string // what
	cause error  // what the standard library reported, if anything
}

func (e *inputError) Error() string {
	s := e.msg
	if e.place != "" {
		s = e.place + ": " + s
	}
	if e.cause != nil {
		s += ": " + e.cause.Error()
	}
	return s
}

func (e *inputError) Unwrap() []error {
	if e.cause != nil {
		return []error{e.kind, e.cause}
	}
	return []error{e.kind}
}

func malformed(format string, args ...any) error {
	return &inputError{kind: ErrMalformed, msg: fmt.Sprintf(format, args...)}
}

// malformedCause is malformed with the error that found the problem
// appended after a colon.
func malformedCause(cause error, format string, args ...any) error {
	return &inputError{kind: ErrMalformed, msg: fmt.Sprintf(format, args...), cause: cause}
}

func tooLarge(format string, args ...any) error {
	return &inputError{kind: ErrTooLarge, msg: fmt.Sprintf(format, args...)}
}

// at tells an error found by a helper, which does not know where it is,
// where the problem is: a place ("event 7") goes in front of the places
// it holds ("record 3, event 7"). Callers build place only once there is
// an error, so the events that are fine cost no formatting.
func at(place string, err error) error {
	e, ok := errors.AsType[*inputError](err)
	if !ok {
		return err
	}
	c := *e
	if c.place != "" {
		place += ", " + c.place
	}
	c.place = place
	return &c
}

// maxShown is how much of a wrong value an error quotes: enough to
// recognise it, while the error, which goes back to the sender and into
// its logs, stays short whatever was sent.
const maxShown = 40

// shown quotes a value from the input for an error message, cut to
// maxShown bytes and escaped so that it cannot break the line it is in.
func shown(b []byte) string {
	if len(b) > maxShown {
		return strconv.Quote(string(b[:maxShown])) + "..."
	}
	return strconv.Quote(string(b))
}
