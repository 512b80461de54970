package service

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"

	"connectrpc.com/connect"

	"github.com/spool-run/spool"
	"github.com/spool-run/spool/internal/apierr"
	"github.com/spool-run/spool/internal/token"
)

// fail is how every operation returns an error from below (the store, the
// token layer): errors of a known kind pass as they are; a forged or
// malformed task token is the caller's mistake; anything else is the
// server's own failure, logged here with an id and answered with that id
// only, so internals do not leak to clients but an operator can find the
// cause.
func (s *Service) fail(ctx context.Context, op string, err error) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, token.ErrMalformed) || errors.Is(err, token.ErrSignature) {
		return apierr.Invalid("task_token: %w", err)
	}
	if errors.Is(err, spool.ErrThrottled) {
		return apierr.Errorf(spool.ErrThrottled, "%w; retry with backoff", err)
	}
	if apierr.Code(err) != connect.CodeInternal {
		if errors.Is(err, spool.ErrUnavailable) {
			s.outages.Saw()
		}
		return err
	}
	id := ErrorID()
	s.log.ErrorContext(ctx, "request failed", "op", op, "error_id", id, "error", err)
	return apierr.Errorf(spool.ErrInternal, "internal error %s in %s; the server log has the details", id, op)
}

// ErrorID is a short random id that ties an error a client sees to the
// server's log line with its details.
func ErrorID() string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// errDraining ends a follow when the server shuts down.
var errDraining = apierr.Errorf(spool.ErrUnavailable, "server is shutting down; reconnect and resume from the last sequence received")
