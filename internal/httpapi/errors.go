package httpapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"

	"github.com/spool-run/spool"
	"github.com/spool-run/spool/internal/apierr"
	"github.com/spool-run/spool/internal/service"
)

// httpError is a failure of the HTTP request itself (a malformed query
// parameter, an unknown path), decided here before the core is asked, with
// the status to answer it with and a message a person can act on.
type httpError struct {
	status int
	msg    string
}

func (e *httpError) Error() string { return e.msg }

func errorf(status int, format string, args ...any) error {
	return &httpError{status: status, msg: fmt.Sprintf(format, args...)}
}

func badRequest(format string, args ...any) error {
	return errorf(http.StatusBadRequest, format, args...)
}

// errorBody is every error response: {"error": "..."}.
type errorBody struct {
	Error string `json:"error"`
}

// statusOf maps an error to an HTTP status and the message to show: this
// package's own errors carry their status, the core's errors their kind's
// (apierr.Status). The core has already logged its internal failures with
// an id; anything else unknown is logged here the same way, so internals
// do not leak to clients while an operator can still find the cause.
func statusOf(r *http.Request, log *slog.Logger, err error) (int, string) {
	var he *httpError
	switch {
	case errors.As(err, &he):
		return he.status, he.msg
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return http.StatusServiceUnavailable, "the request was cancelled or timed out before the store answered; retry"
	}
	status := apierr.Status(err)
	if status == http.StatusInternalServerError && !errors.Is(err, spool.ErrInternal) {
		id := service.ErrorID()
		log.ErrorContext(r.Context(), "request failed", "method", r.Method, "path", r.URL.Path, "error_id", id, "error", err)
		return status, fmt.Sprintf("internal error %s; the server log has the details", id)
	}
	return status, err.Error()
}

func writeError(w http.ResponseWriter, r *http.Request, log *slog.Logger, err error) {
	status, msg := statusOf(r, log, err)
	if status == http.StatusServiceUnavailable || status == http.StatusTooManyRequests {
		w.Header().Set("Retry-After", "1")
	}
	writeJSON(w, status, errorBody{Error: msg})
}

// writeJSON answers with v as JSON. HTML is not escaped: log text stays
// readable in curl, and nosniff keeps browsers from treating it as a page.
func writeJSON(w http.ResponseWriter, status int, v any) {
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v) // a failed write means the client is gone
}
