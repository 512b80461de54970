package store

import (
	"errors"
	"fmt"
)

// The kinds of failure a store reports. The server maps them to Connect
// codes; wrap them (see Errorf) so the message says what happened.
var (
	// ErrNotFound: no such job.
	ErrNotFound = errors.New("not found")
	// ErrInvalid: the request can never succeed as made (bad cursor, event
	// out of order, batch too large).
	ErrInvalid = errors.New("invalid argument")
	// ErrStaleLease: the lease is not the job's current one, or the job is
	// finished. The caller must stop acting on the job.
	ErrStaleLease = errors.New("stale lease")
	// ErrThrottled: the backend asked us to slow down; retry later.
	ErrThrottled = errors.New("throttled")
)

// kindError carries a readable message and one of the kinds above.
type kindError struct {
	kind error
	err  error
}

func (e *kindError) Error() string   { return e.err.Error() }
func (e *kindError) Unwrap() []error { return []error{e.kind, e.err} }

// Errorf returns an error of the given kind (ErrNotFound, ErrInvalid, …) with
// a formatted message. errors.Is(err, kind) holds; %w in format also wraps.
func Errorf(kind error, format string, args ...any) error {
	return &kindError{kind: kind, err: fmt.Errorf(format, args...)}
}

// JobNotFound is the error for a job id no store knows.
func JobNotFound(jobID string) error {
	return Errorf(ErrNotFound, "job %q not found", jobID)
}
