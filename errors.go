package spool

import "errors"

// The kinds of failure spool reports. Every error returned by the client,
// the server's API and the stores wraps exactly one of them, so callers
// branch with errors.Is:
//
//	if errors.Is(err, spool.ErrNotFound) { ... }
//
// On the wire each kind is one Connect code (named in its comment), and over
// REST one HTTP status.
var (
	// ErrInvalidArgument: the request can never succeed as made; the message
	// says what to change. (InvalidArgument, HTTP 400.)
	ErrInvalidArgument = errors.New("invalid argument")
	// ErrNotFound: no such job. (NotFound, HTTP 404.)
	ErrNotFound = errors.New("not found")
	// ErrAlreadyExists: something with that name or idempotency key exists
	// and differs from what was asked. (AlreadyExists, HTTP 409.)
	ErrAlreadyExists = errors.New("already exists")
	// ErrStaleLease: the lease is no longer the job's current one (another
	// attempt owns the job, or it is finished). A worker must stop acting
	// on the job. (FailedPrecondition, HTTP 412.)
	ErrStaleLease = errors.New("stale lease")
	// ErrConflict: the job is not in a state that allows this yet (deleting
	// a job that is still queued or running, rerunning one that has not
	// finished); the message says what to do first. (Aborted, HTTP 409.)
	ErrConflict = errors.New("conflict")
	// ErrThrottled: the server or its store asked the caller to slow down;
	// retry later with backoff. (ResourceExhausted, HTTP 429.)
	ErrThrottled = errors.New("throttled")
	// ErrUnauthenticated: no credentials, or credentials that are not (or no
	// longer) valid. (Unauthenticated, HTTP 401.)
	ErrUnauthenticated = errors.New("unauthenticated")
	// ErrPermissionDenied: the credentials are valid but do not allow this.
	// (PermissionDenied, HTTP 403.)
	ErrPermissionDenied = errors.New("permission denied")
	// ErrUnavailable: the server could not be reached or is shutting down;
	// the same call may succeed later. (Unavailable, HTTP 503.)
	ErrUnavailable = errors.New("unavailable")
	// ErrInternal: the server failed; its log has the details under the
	// error id in the message. (Internal, HTTP 500.)
	ErrInternal = errors.New("internal error")
)

// Kinds returns every error kind above, for code that maps them to something
// else (codes, statuses) and must not forget one. The slice is the
// caller's.
func Kinds() []error {
	return []error{
		ErrInvalidArgument, ErrNotFound, ErrAlreadyExists, ErrStaleLease, ErrConflict, ErrThrottled,
		ErrUnauthenticated, ErrPermissionDenied, ErrUnavailable, ErrInternal,
	}
}
