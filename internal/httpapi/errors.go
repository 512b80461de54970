package httpapi

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"

	"github.com/spool-run/spool/internal/store"
)

// httpError is a failure with the status to answer it with and a message a
// person can act on.
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

// statusOf maps an error from this package or the store to an HTTP status
// and the message to show. Unknown errors are logged with an id and
// answered with that id only, so internals do not leak to clients while an
// operator can still find the cause.
func statusOf(r *http.Request, log *slog.Logger, err error) (int, string) {
	var he *httpError
	switch {
	case errors.As(err, &he):
		return he.status, he.msg
	case errors.Is(err, store.ErrNotFound):
		return http.StatusNotFound, err.Error()
	case errors.Is(err, store.ErrInvalid):
		return http.StatusBadRequest, err.Error()
	case errors.Is(err, store.ErrThrottled):
		return http.StatusServiceUnavailable, err.Error() + "; retry in a moment"
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return http.StatusServiceUnavailable, "the request was cancelled or timed out before the store answered; retry"
	}
	id := errorID()
	log.ErrorContext(r.Context(), "request failed", "method", r.Method, "path", r.URL.Path, "error_id", id, "error", err)
	return http.StatusInternalServerError, fmt.Sprintf("internal error %s; the server log has the details", id)
}

func writeError(w http.ResponseWriter, r *http.Request, log *slog.Logger, err error) {
	status, msg := statusOf(r, log, err)
	if status == http.StatusServiceUnavailable {
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

func errorID() string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
