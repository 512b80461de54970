package httpapi

import (
	"net/http"
	"net/url"
	"strconv"
	"strings"
)

// websocketURL is where a client streams jobID's log from after lastLine,
// as seen by the client: the request's host, and wss when the request came
// over TLS, directly or through a proxy that says so (X-Forwarded-Proto,
// X-Forwarded-Host).
func websocketURL(r *http.Request, jobID string, lastLine int64) string {
	scheme := "ws"
	if r.TLS != nil || strings.EqualFold(firstValue(r.Header.Get("X-Forwarded-Proto")), "https") {
		scheme = "wss"
	}
	host := r.Host
	if h := firstValue(r.Header.Get("X-Forwarded-Host")); h != "" {
		host = h
	}
	u := url.URL{Scheme: scheme, Host: host, Path: "/api/v1/jobs/" + jobID + "/logs/ws",
		RawQuery: "last_line=" + strconv.FormatInt(lastLine, 10)}
	return u.String()
}

// firstValue is the first of a comma-separated header's values: the one
// the outermost proxy set.
func firstValue(h string) string {
	v, _, _ := strings.Cut(h, ",")
	return strings.TrimSpace(v)
}
