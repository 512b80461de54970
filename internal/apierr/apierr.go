// Package apierr is spool's error vocabulary on the wire: one table that
// pairs each error kind of package spool with its Connect code and HTTP
// status. The service core returns kind-wrapped errors; the Connect and
// REST adapters turn them into codes and statuses with Code and Status; the
// client turns codes back into kinds with Kind. A kind is decided once, in
// the core, and every entrance reports it the same way.
package apierr

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"connectrpc.com/connect"

	"github.com/spool-run/spool"
)

// kinds pairs every error kind with its Connect code and HTTP status. The
// statuses are the ones the Connect protocol itself uses for these codes,
// except FailedPrecondition: 412 says "the lease you hold is not current"
// more plainly than a 400 would.
var kinds = []struct {
	kind   error
	code   connect.Code
	status int
}{
	{spool.ErrInvalidArgument, connect.CodeInvalidArgument, http.StatusBadRequest},
	{spool.ErrNotFound, connect.CodeNotFound, http.StatusNotFound},
	{spool.ErrAlreadyExists, connect.CodeAlreadyExists, http.StatusConflict},
	{spool.ErrStaleLease, connect.CodeFailedPrecondition, http.StatusPreconditionFailed},
	{spool.ErrConflict, connect.CodeAborted, http.StatusConflict},
	{spool.ErrThrottled, connect.CodeResourceExhausted, http.StatusTooManyRequests},
	{spool.ErrUnauthenticated, connect.CodeUnauthenticated, http.StatusUnauthorized},
	{spool.ErrPermissionDenied, connect.CodePermissionDenied, http.StatusForbidden},
	{spool.ErrUnavailable, connect.CodeUnavailable, http.StatusServiceUnavailable},
	{spool.ErrInternal, connect.CodeInternal, http.StatusInternalServerError},
}

// kindError carries a readable message and one kind.
type kindError struct {
	kind error
	err  error
}

func (e *kindError) Error() string   { return e.err.Error() }
func (e *kindError) Unwrap() []error { return []error{e.kind, e.err} }

// Errorf returns an error of the given kind (spool.ErrNotFound, …) whose
// message is the formatted text alone: errors.Is(err, kind) holds, and %w
// in format wraps as usual.
func Errorf(kind error, format string, args ...any) error {
	return &kindError{kind: kind, err: fmt.Errorf(format, args...)}
}

// Invalid is apierr.Errorf(spool.ErrInvalidArgument, …), the most common kind.
func Invalid(format string, args ...any) error {
	return Errorf(spool.ErrInvalidArgument, format, args...)
}

// Code is the Connect code for err: its kind's, or for a *connect.Error its
// own, or Canceled and DeadlineExceeded for context errors, else Internal.
func Code(err error) connect.Code {
	var ce *connect.Error
	switch {
	case err == nil:
		return 0
	case errors.As(err, &ce):
		return ce.Code()
	case errors.Is(err, context.Canceled):
		return connect.CodeCanceled
	case errors.Is(err, context.DeadlineExceeded):
		return connect.CodeDeadlineExceeded
	}
	for _, k := range kinds {
		if errors.Is(err, k.kind) {
			return k.code
		}
	}
	return connect.CodeInternal
}

// Kind is the error kind of a Connect code (nil for codes no kind has,
// such as Canceled).
func Kind(code connect.Code) error {
	for _, k := range kinds {
		if k.code == code {
			return k.kind
		}
	}
	if code == connect.CodeDeadlineExceeded || code == connect.CodeAborted {
		return spool.ErrUnavailable
	}
	return nil
}

// Status is the HTTP status for err, through its Connect code. A cancelled
// or timed-out request answers 503: the client may simply retry.
func Status(err error) int {
	code := Code(err)
	for _, k := range kinds {
		if k.code == code {
			return k.status
		}
	}
	if code == connect.CodeCanceled || code == connect.CodeDeadlineExceeded {
		return http.StatusServiceUnavailable
	}
	return http.StatusInternalServerError
}

// Connect returns err as the *connect.Error its kind calls for, keeping
// its message.
func Connect(err error) error {
	var ce *connect.Error
	if err == nil || errors.As(err, &ce) {
		return err
	}
	return connect.NewError(Code(err), err)
}

// FromStatus is the error a REST answer of status with message msg
// stands for: the kind whose status it is (the first, for 409, which two
// kinds share: ErrAlreadyExists), a 413 (a body over a limit) and a 416 (a
// range past the end) as ErrInvalidArgument, and ErrInternal for any
// other failure.
func FromStatus(status int, msg string) error {
	kind := spool.ErrInternal
	if status == http.StatusRequestEntityTooLarge || status == http.StatusRequestedRangeNotSatisfiable {
		kind = spool.ErrInvalidArgument
	}
	for _, k := range kinds {
		if k.status == status {
			kind = k.kind
			break
		}
	}
	return Errorf(kind, "%s", msg)
}
