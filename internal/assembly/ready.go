package assembly

import (
	"net/http"
)

// readyz answers a readiness probe: 200 while the store answers, 503 with
// what it answered while it does not, or while the server shuts down. It
// reads no credentials: a probe has none, and the answer says nothing of
// jobs.
func (s *Server) readyz(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	if err := s.svc.Ready(r.Context()); err != nil {
		w.WriteHeader(http.StatusServiceUnavailable)
		_, _ = w.Write([]byte("not ready: " + err.Error() + "\n"))
		return
	}
	_, _ = w.Write([]byte("ok\n"))
}
