package cli

import (
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestWrongScheme: an https:// address whose server speaks plain HTTP, or
// an http:// one whose server speaks TLS, is said to be so at once, with
// the address to type, instead of being retried as a server that is away
// or reported as "400 Bad Request (internal)".
func TestWrongScheme(t *testing.T) {
	t.Parallel()
	plain := httptest.NewServer(http.NotFoundHandler())
	defer plain.Close()
	secure := httptest.NewUnstartedServer(http.NotFoundHandler())
	// It logs each plain request it refuses; the test makes one.
	secure.Config.ErrorLog = log.New(io.Discard, "", 0)
	secure.StartTLS()
	defer secure.Close()

	asHTTPS := strings.Replace(plain.URL, "http://", "https://", 1)
	wantRefusal(t, "https to a plain server", runLocal("--server", asHTTPS, "--api-key", "k", "jobs", "list"),
		"the server at "+asHTTPS+" speaks plain HTTP, not HTTPS: use --server "+plain.URL+" (or set SPOOL_SERVER to it)")
	asHTTP := strings.Replace(secure.URL, "https://", "http://", 1)
	wantRefusal(t, "http to a TLS server", runLocal("--server", asHTTP, "--api-key", "k", "jobs", "list"),
		"the server at "+asHTTP+" speaks HTTPS, not plain HTTP: use --server "+secure.URL+" (or set SPOOL_SERVER to it; --ca names its CA if it is a private one)")
}
