package httpapi

import (
	"net/http"
	"time"

	"github.com/spool-run/spool"
	"github.com/spool-run/spool/internal/apierr"
	"github.com/spool-run/spool/internal/convert"
	"github.com/spool-run/spool/internal/service"
)

// The web UI logs in once with an API key and then holds a session cookie:
// the key never goes into a URL or a cookie, and the browser's WebSocket,
// which cannot send headers, is let in by the cookie. The cookie is
// HttpOnly (no script reads it), SameSite=Strict (no other site's page
// sends it) and Secure over TLS.

// Session says who is logged in (schema Session in openapi.yaml).
type Session struct {
	Name string `json:"name"`
	Role string `json:"role"`
	// AuthDisabled: the server lets everyone in; there is no login.
	AuthDisabled bool `json:"auth_disabled,omitempty"`
}

// loginRequest is the body of POST /api/v1/session.
type loginRequest struct {
	Key string `json:"key"`
}

const maxLoginBody = 4 << 10

func (a *api) login(w http.ResponseWriter, r *http.Request) {
	var req loginRequest
	if err := readJSON(w, r, &req, maxLoginBody); err != nil {
		writeError(w, r, a.Log, err)
		return
	}
	if req.Key == "" {
		writeError(w, r, a.Log, apierr.Errorf(spool.ErrUnauthenticated, `send {"key": "..."}: an API key (an admin creates one with spool keys create)`))
		return
	}
	session, expires, err := a.Service.Login(r.Context(), req.Key)
	if err != nil {
		writeError(w, r, a.Log, err)
		return
	}
	setSession(w, r, session, expires)
	// Who the key is: the core checks it again on every request, by the
	// cookie from now on.
	r.AddCookie(&http.Cookie{Name: service.SessionCookie, Value: session})
	a.whoami(w, r.WithContext(service.WithCredentials(r.Context(), service.Credentials{Host: r.Host, Session: session})))
}

func (a *api) whoami(w http.ResponseWriter, r *http.Request) {
	if a.Service.AuthDisabled() {
		writeJSON(w, http.StatusOK, Session{Name: "anyone", Role: "admin", AuthDisabled: true})
		return
	}
	c, err := a.Service.Whoami(r.Context())
	if err != nil {
		writeError(w, r, a.Log, err)
		return
	}
	writeJSON(w, http.StatusOK, Session{Name: c.Name, Role: convert.Role(c.Role).String()})
}

// logout ends the session on every server (a copy of the cookie is of no
// use after it) and clears the cookie.
func (a *api) logout(w http.ResponseWriter, r *http.Request) {
	if err := a.Service.Logout(r.Context()); err != nil {
		writeError(w, r, a.Log, err)
		return
	}
	setSession(w, r, "", time.Unix(1, 0))
	w.WriteHeader(http.StatusNoContent)
}

// setSession sets (or, with an expiry in the past, clears) the login
// cookie.
func setSession(w http.ResponseWriter, r *http.Request, value string, expires time.Time) {
	http.SetCookie(w, &http.Cookie{Name: service.SessionCookie, Value: value, Path: "/", Expires: expires,
		HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: r.TLS != nil || r.Header.Get("X-Forwarded-Proto") == "https"})
}

// Ticket is a WebSocket ticket (schema Ticket in openapi.yaml).
type Ticket struct {
	Ticket    string    `json:"ticket"`
	JobID     string    `json:"job_id"`
	ExpiresAt time.Time `json:"expires_at"`
}

// ticket hands a page that holds a key (a configured CORS origin's) a
// ticket for ?ticket= on the log WebSocket of the job ?job_id= names, which
// a browser cannot send an Authorization header to. It opens that stream
// once, within a minute, and does nothing else.
func (a *api) ticket(w http.ResponseWriter, r *http.Request) {
	jobID := r.URL.Query().Get("job_id")
	t, expires, err := a.Service.Ticket(r.Context(), jobID)
	if err != nil {
		writeError(w, r, a.Log, err)
		return
	}
	writeJSON(w, http.StatusOK, Ticket{Ticket: t, JobID: jobID, ExpiresAt: expires.UTC()})
}
