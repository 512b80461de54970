package wire

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"slices"
	"syscall"
	"time"

	"connectrpc.com/connect"

	spoolv1 "github.com/spool-run/spool/gen/spool/v1"
	"github.com/spool-run/spool/internal/backoff"
)

// Pauses between the tries of a call that found the server or its store
// away: short at first (a restarting database is back within a second or
// two), never longer than a couple of seconds.
const (
	firstRetryPause = 100 * time.Millisecond
	maxRetryPause   = 2 * time.Second
)

// retrying makes a unary call again, with backoff, while it fails because
// the server could not be reached or answered Unavailable (it is
// restarting, or its store is away), for up to its budget in all. A call
// is made again only when that cannot do anything twice:
//
//   - it never reached the server (the connection was refused), or
//   - it changes nothing (the procedure says so: NO_SIDE_EFFECTS or
//     IDEMPOTENT), or
//   - it carries a request id, which makes the server answer a repeat with
//     what the first call did (EnqueueJob, RerunJob), or a request id for
//     each of its jobs (EnqueueJobs).
//
// Anything else that failed on its way may have been done, and its error
// is returned as it is. Streams are left alone: they resume on their own
// (client.Reconnect).
type retrying struct {
	budget  time.Duration
	onRetry func(err error, wait time.Duration) // may be nil
}

func (r retrying) WrapUnary(next connect.UnaryFunc) connect.UnaryFunc {
	return func(ctx context.Context, req connect.AnyRequest) (connect.AnyResponse, error) {
		giveUp := time.Now().Add(r.budget)
		pauses := backoff.New(firstRetryPause, maxRetryPause)
		for {
			resp, err := next(ctx, req)
			if err == nil || ctx.Err() != nil || wrongScheme(err) || !(notSent(err) || (away(err) && repeatable(req))) {
				return resp, err
			}
			pause := pauses.Delay()
			if time.Now().Add(pause).After(giveUp) {
				return resp, err
			}
			if r.onRetry != nil {
				r.onRetry(err, pause)
			}
			if backoff.Sleep(ctx, pause) != nil {
				return resp, err
			}
		}
	}
}

func (r retrying) WrapStreamingClient(next connect.StreamingClientFunc) connect.StreamingClientFunc {
	return next
}

func (r retrying) WrapStreamingHandler(next connect.StreamingHandlerFunc) connect.StreamingHandlerFunc {
	return next
}

// wrongScheme reports whether the call went to https:// and a plain HTTP
// server answered: that is the address's fault, and no retry mends it.
func wrongScheme(err error) bool { return errors.Is(err, http.ErrSchemeMismatch) }

// notSent reports whether a call failed before its request could reach the
// server: no connection could be made.
func notSent(err error) bool {
	var op *net.OpError
	return (errors.As(err, &op) && op.Op == "dial") || errors.Is(err, syscall.ECONNREFUSED)
}

// away reports whether a call failed because the server, or what it needs,
// was away: an Unavailable answer, or a connection cut under the call.
func away(err error) bool {
	return connect.CodeOf(err) == connect.CodeUnavailable || ConnectionLost(err)
}

// ConnectionLost reports whether err is the connection's rather than the
// server's answer: a network error, a connection reset or broken, or a
// message cut short (Internal or Unknown wrapping io.ErrUnexpectedEOF).
func ConnectionLost(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE)
}

// repeatable reports whether making req again is harmless.
func repeatable(req connect.AnyRequest) bool {
	if req.Spec().IdempotencyLevel != connect.IdempotencyUnknown {
		return true
	}
	switch m := req.Any().(type) {
	case interface{ GetRequestId() string }:
		return m.GetRequestId() != ""
	case interface {
		GetJobs() []*spoolv1.EnqueueJobRequest
	}:
		jobs := m.GetJobs()
		return len(jobs) > 0 && !slices.ContainsFunc(jobs, func(j *spoolv1.EnqueueJobRequest) bool { return j.GetRequestId() == "" })
	}
	return false
}
