package httpapi

import "net/http"

// The server's door checks every request's credentials before any of its
// body is read, and needs to know two things of this API's routes: which
// are served without credentials, and how a route's clients read a
// refusal.

// openRoutes are served without credentials: the login, whose body is the
// key itself (and is read within maxLoginBody), the logout, which only
// clears a cookie, and the OpenAPI document.
var openRoutes = []string{"POST /api/v1/session", "DELETE /api/v1/session", "GET /api/v1/openapi.yaml"}

// OpenRoutes lists the routes served without credentials, as "METHOD
// /path" patterns.
func OpenRoutes() []string { return append([]string(nil), openRoutes...) }

// Refusal is how a refusal of a request for the route pattern is written
// when its clients read it in a form or terms of their own (Firehose reads
// its response format even then), or nil for the JSON error every other route
// answers with.
func Refusal(pattern string) func(http.ResponseWriter, *http.Request, error) {
	switch pattern {
	case "POST /api/v1/ingest/firehose":
		return refuseFirehose
	case "POST /api/v1/ingest/lines":
		// A log shipper's token is set in its configuration, not typed:
		// the refusal says where.
		return refuseShipper
	}
	return nil
}
