package assembly

import (
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"strings"

	"github.com/spool-run/spool"
	"github.com/spool-run/spool/internal/apierr"
	"github.com/spool-run/spool/internal/service"
)

// guard is the door every request goes through, whatever entrance it is
// for (Connect, REST, WebSocket, UI, metrics). It refuses at once, through
// the core's own checks, a request sent to a name the server does not
// answer to (DNS rebinding) or coming from another site's page; then,
// unless the request's route is open, it has the core authenticate the
// request's credentials, before any of its body is read: a caller without
// a valid key or session costs a header's worth of work, however large a
// body it sends. Which calls a key may make is then the core's to decide,
// operation by operation, with the caller found here.
func (s *Server) guard(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		cr := credentials(r)
		d := s.doors.of(r)
		if err := s.svc.CheckHost(r.Host); err != nil {
			d.refuse(w, r, err)
			return
		}
		if err := s.svc.CheckOrigin(cr); err != nil {
			d.refuse(w, r, err)
			return
		}
		if cr.Origin != "" && slices.Contains(s.cfg.Server.CORSOrigins, strings.TrimSuffix(cr.Origin, "/")) {
			allowCORS(w, cr.Origin)
			if r.Method == http.MethodOptions {
				w.WriteHeader(http.StatusNoContent)
				return
			}
		}
		ctx := service.WithCredentials(r.Context(), cr)
		if !d.open {
			var err error
			if ctx, err = s.svc.Authenticate(ctx); err != nil {
				if errors.Is(err, spool.ErrUnauthenticated) {
					w.Header().Set("WWW-Authenticate", `Bearer realm="spool"`)
				}
				d.refuse(w, r, err)
				return
			}
		}
		next.ServeHTTP(w, r.WithContext(ctx))
	})
}

// credentials are what a request presents: an API key (Authorization:
// Bearer, or Firehose's X-Amz-Firehose-Access-Key) or a job token
// (Authorization: Bearer jt1.…), the web UI's session
// cookie, and where it was sent from and to.
func credentials(r *http.Request) service.Credentials {
	cr := service.Credentials{Host: r.Host, Origin: r.Header.Get("Origin"),
		Secure: r.TLS != nil || strings.EqualFold(r.Header.Get("X-Forwarded-Proto"), "https")}
	if key, ok := bearer(r.Header.Get("Authorization")); ok && service.IsJobToken(key) {
		// A job's own process shows the job token its worker gave it:
		// the core lets it keep that job's artifacts and nothing else.
		cr.JobToken = key
	} else if ok {
		cr.Key = key
	} else if k := r.Header.Get("X-Amz-Firehose-Access-Key"); k != "" {
		// Amazon Data Firehose's HTTP endpoint destination sends the
		// access key it was configured with in a header of its own.
		cr.Key = strings.TrimSpace(k)
	}
	if c, err := r.Cookie(service.SessionCookie); err == nil {
		cr.Session = c.Value
	}
	// A browser's WebSocket can send neither a header nor, from another
	// site's page, the cookie: it shows a ticket instead, which is taken
	// on a job's log stream only.
	if t := r.URL.Query().Get("ticket"); t != "" && isLogStream(r) {
		cr.Ticket = t
	}
	return cr
}

// isLogStream reports whether r opens a job's log WebSocket
// (GET /api/v1/jobs/{job_id}/logs/ws).
func isLogStream(r *http.Request) bool {
	rest, underJobs := strings.CutPrefix(r.URL.Path, "/api/v1/jobs/")
	id, isLogs := strings.CutSuffix(rest, "/logs/ws")
	return underJobs && isLogs && id != "" && !strings.Contains(id, "/") && r.Method == http.MethodGet &&
		strings.EqualFold(r.Header.Get("Upgrade"), "websocket")
}

// bearer is the token of an Authorization header of the Bearer scheme,
// whose name, like every HTTP authentication scheme's, is not case
// sensitive ("bearer KEY" is sent by some clients), with whatever spaces
// were put around the two.
func bearer(header string) (string, bool) {
	f := strings.Fields(header)
	if len(f) != 2 || !strings.EqualFold(f[0], "Bearer") {
		return "", false
	}
	return f[1], true
}

// allowCORS lets a configured origin's pages call the API with a key.
func allowCORS(w http.ResponseWriter, origin string) {
	h := w.Header()
	h.Set("Access-Control-Allow-Origin", origin)
	h.Add("Vary", "Origin")
	h.Set("Access-Control-Allow-Methods", "GET, POST, PUT, DELETE")
	h.Set("Access-Control-Allow-Headers", "Authorization, Content-Type, Connect-Protocol-Version, Connect-Timeout-Ms")
	h.Set("Access-Control-Max-Age", "600")
}

// refuse answers a refused request as JSON, with the status its kind has.
func refuse(w http.ResponseWriter, _ *http.Request, err error) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(apierr.Status(err))
	_ = json.NewEncoder(w).Encode(map[string]string{"error": err.Error()})
}

// metricsFor serves /metrics to keys allowed to read them.
func (s *Server) metricsFor(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := s.svc.Authorize(r.Context(), service.PermMetrics); err != nil {
			refuse(w, r, err)
			return
		}
		h.ServeHTTP(w, r)
	})
}
