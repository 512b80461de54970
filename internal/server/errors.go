package server

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"

	"connectrpc.com/connect"

	"github.com/spool-run/spool/internal/store"
	"github.com/spool-run/spool/internal/token"
)

// apiError turns an error from the store or token layer into the Connect
// error the caller sees. Unknown errors are logged here with an id and
// answered with that id only, so internals do not leak to clients but an
// operator can find the cause.
func apiError(ctx context.Context, log *slog.Logger, op string, err error) error {
	var ce *connect.Error
	switch {
	case err == nil:
		return nil
	case errors.As(err, &ce):
		return err
	case errors.Is(err, store.ErrNotFound):
		return connect.NewError(connect.CodeNotFound, err)
	case errors.Is(err, store.ErrInvalid):
		return connect.NewError(connect.CodeInvalidArgument, err)
	case errors.Is(err, store.ErrStaleLease):
		return connect.NewError(connect.CodeFailedPrecondition, err)
	case errors.Is(err, store.ErrThrottled):
		return connect.NewError(connect.CodeResourceExhausted, fmt.Errorf("%w; retry with backoff", err))
	case errors.Is(err, token.ErrMalformed), errors.Is(err, token.ErrSignature):
		return connect.NewError(connect.CodeInvalidArgument, fmt.Errorf("task_token: %w", err))
	case errors.Is(err, context.Canceled):
		return connect.NewError(connect.CodeCanceled, err)
	case errors.Is(err, context.DeadlineExceeded):
		return connect.NewError(connect.CodeDeadlineExceeded, err)
	}
	id := errorID()
	log.ErrorContext(ctx, "request failed", "op", op, "error_id", id, "error", err)
	return connect.NewError(connect.CodeInternal, fmt.Errorf("internal error %s in %s; the server log has the details", id, op))
}

func errorID() string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
