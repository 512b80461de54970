package assembly

import (
	"net/http"

	"github.com/spool-run/spool/internal/service"
)

// readyz answers a readiness probe: 200 while the store answers, 503
// naming the store while it does not, or while the server shuts down. It
// reads no credentials: a probe has none, so the answer says which store
// and no more (the driver's error can name the database's host and user);
// the server's log has the rest, once per failed ping.
func (s *Server) readyz(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	if err := s.svc.Ready(r.Context()); err != nil {
		w.WriteHeader(http.StatusServiceUnavailable)
		_, _ = w.Write([]byte("not ready: " + service.ReadyReason(err) + "; the server's log says why\n"))
		return
	}
	_, _ = w.Write([]byte("ok\n"))
}
