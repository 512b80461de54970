package cli

import (
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	"connectrpc.com/connect"

	"github.com/spool-run/spool"
)

// printJSON prints v indented: what --json prints is jobjson's shape, the
// one the REST API serves, so a script reads the same fields from either.
func printJSON(w io.Writer, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	_, err = fmt.Fprintln(w, string(b))
	return err
}

// ago says how long before now t was, the way people say it.
func ago(t time.Time, now time.Time) string {
	d := now.Sub(t)
	switch {
	case t.IsZero():
		return "-"
	case d < time.Minute:
		return fmt.Sprintf("%ds ago", int(d.Seconds()))
	case d < time.Hour:
		return fmt.Sprintf("%dm ago", int(d.Minutes()))
	case d < 48*time.Hour:
		return fmt.Sprintf("%dh ago", int(d.Hours()))
	}
	return fmt.Sprintf("%dd ago", int(d.Hours()/24))
}

// elapsed says how long a job's current (or last) attempt has run: up to
// now while it runs, to its end once final; "-" before it starts.
func elapsed(j *spool.Job, now time.Time) string {
	start := j.StartedAt
	if start.IsZero() || waiting(j.State) {
		return "-"
	}
	end := now
	if r := j.Result; r != nil && !r.FinishedAt.IsZero() {
		end = r.FinishedAt
	}
	return duration(end.Sub(start))
}

// duration is d for people: to the second past a minute, to the
// millisecond below one.
func duration(d time.Duration) string {
	switch {
	case d < 0:
		return "0s"
	case d < time.Minute:
		return d.Round(time.Millisecond).String()
	}
	return d.Round(time.Second).String()
}

// commandLine is a job's command for people: argv joined, or the script;
// for an external job, where its log comes from.
func commandLine(p spool.JobParams) string {
	if x := p.External; x != nil && x.Source != "" {
		return "(log of " + x.Source + ")"
	}
	if p.Script != "" {
		return p.Script
	}
	return strings.Join(p.Argv, " ")
}

// explain turns an error into a sentence for the person at the terminal.
// Only an error from a call to the server is about reaching it: commands
// that run locally (server, worker) word their own errors.
// reason is what a call's error says, without the code's name a
// connect.Error puts first.
func reason(err error) string {
	if ce := new(connect.Error); errors.As(err, &ce) {
		return ce.Message()
	}
	return err.Error()
}

func explain(err error, e *env) string {
	server := e.server
	var ce *connect.Error
	isConnect := errors.As(err, &ce)
	if hint := wrongScheme(err, server); hint != "" {
		return hint
	}
	switch {
	case errors.Is(err, spool.ErrUnavailable):
		return fmt.Sprintf("cannot reach the spool server at %s (%s).\nStart one with `spool server`, or point --server or SPOOL_SERVER at yours.", server, reason(err))
	case !isConnect:
		return err.Error()
	}
	switch ce.Code() {
	case connect.CodeNotFound, connect.CodeInvalidArgument, connect.CodeFailedPrecondition, connect.CodePermissionDenied:
		return ce.Message()
	case connect.CodeUnauthenticated:
		return fmt.Sprintf("%s (%s)", ce.Message(), e.keyHint())
	case connect.CodeUnimplemented:
		// What answers at that address is a web server, but not spool's API.
		return fmt.Sprintf("the server at %s does not answer spool's API (%s): is it a spool server? Point --server or SPOOL_SERVER at one (http://host:port, nothing after the port).",
			server, strings.TrimSpace(ce.Message()+" "+ce.Code().String()))
	}
	return fmt.Sprintf("%s (%s)", ce.Message(), ce.Code())
}

// wrongScheme says what to type when err is what a server answers a
// client of the other scheme: an https:// address whose server speaks
// plain HTTP, or an http:// one whose server speaks only TLS (Go's server
// answers that with a bare 400 Bad Request, so the server is asked for a
// TLS handshake to tell). It is "" for any other error.
func wrongScheme(err error, server string) string {
	u, perr := url.Parse(server)
	if perr != nil || u.Host == "" {
		return ""
	}
	other := *u
	switch {
	case u.Scheme == "https" && errors.Is(err, http.ErrSchemeMismatch):
		other.Scheme = "http"
		return fmt.Sprintf("the server at %s speaks plain HTTP, not HTTPS: use --server %s (or set SPOOL_SERVER to it)", server, other.String())
	case u.Scheme == "http" && connect.CodeOf(err) == connect.CodeInternal && strings.Contains(reason(err), "400 Bad Request") && speaksTLS(u.Host):
		other.Scheme = "https"
		return fmt.Sprintf("the server at %s speaks HTTPS, not plain HTTP: use --server %s (or set SPOOL_SERVER to it; --ca names its CA if it is a private one)", server, other.String())
	}
	return ""
}

// speaksTLS reports whether host:port completes a TLS handshake. Its
// certificate is not checked: nothing is sent, and the question is only
// which protocol the port speaks.
func speaksTLS(hostport string) bool {
	d := &net.Dialer{Timeout: 2 * time.Second}
	conn, err := tls.DialWithDialer(d, "tcp", hostport, &tls.Config{InsecureSkipVerify: true}) //nolint:gosec // a probe of the protocol, sending nothing
	if err != nil {
		return false
	}
	_ = conn.Close()
	return true
}
