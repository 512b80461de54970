package assembly_test

import (
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/spool-run/spool"
	"github.com/spool-run/spool/internal/store/backends/pgstore/pgtest"
	"github.com/spool-run/spool/server"
)

// probe answers GET url+path with its status and body, as a probe with no
// credentials reads them.
func probe(t *testing.T, url, path string) (int, string) {
	t.Helper()
	res, err := http.Get(url + path)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	body, _ := io.ReadAll(res.Body)
	return res.StatusCode, string(body)
}

// probeUntil probes until the status is want (the answer is kept for a
// second), or fails after ten seconds.
func probeUntil(t *testing.T, url, path string, want int) string {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		code, body := probe(t, url, path)
		if code == want {
			return body
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s answered %d %q for ten seconds, want %d", path, code, body, want)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestReadyzFollowsTheStore: a server on PostgreSQL is ready while the
// database runs; once it stops, /readyz answers 503 naming the store and
// its error while /healthz still answers 200 (the process is alive: a
// restart would not help); once the database is back, /readyz is 200
// again. The pings are store calls like the others, on /metrics.
func TestReadyzFollowsTheStore(t *testing.T) {
	t.Parallel()
	db := pgtest.NewCluster(t)
	srv := start(t, func(c *server.Config) {
		withTokenKey(c)
		c.Store.Type, c.Store.Postgres.URL = "postgres", db.URL()
		c.Store.Postgres.ConnectTimeout = time.Second
	})
	if code, body := probe(t, srv.URL, "/readyz"); code != http.StatusOK || body != "ok\n" {
		t.Fatalf("/readyz with the database up: %d %q", code, body)
	}

	db.Stop(t)
	body := probeUntil(t, srv.URL, "/readyz", http.StatusServiceUnavailable)
	if !strings.Contains(body, "the postgres store does not answer") {
		t.Errorf("/readyz with the database down says %q; want it to name the store", body)
	}
	// A probe has no key: the driver's words (the database's address, its
	// user) stay in the server's log.
	if strings.Contains(body, "127.0.0.1") || strings.Contains(body, "refused") || strings.Contains(body, "user=") {
		t.Errorf("/readyz tells anyone what the driver said: %q", body)
	}
	if code, body := probe(t, srv.URL, "/healthz"); code != http.StatusOK {
		t.Errorf("/healthz with the database down: %d %q; it is a liveness check, and the process is alive", code, body)
	}

	db.Start(t)
	probeUntil(t, srv.URL, "/readyz", http.StatusOK)

	res, err := http.DefaultClient.Do(metricsRequest(t, srv.URL, srv.Key(t, spool.RoleRead)))
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	scrape, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`spool_store_errors_total\{kind="[a-z_]+",operation="ping",store="postgres"\} [1-9]`).Match(scrape) {
		t.Errorf("/metrics counts no failed ping:\n%s", scrape)
	}
}
