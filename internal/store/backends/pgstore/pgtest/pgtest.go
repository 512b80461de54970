// Package pgtest gives tests their own PostgreSQL databases on the test
// server `make test` starts (scripts/test-postgres.sh): the server on
// 127.0.0.1:5432 when it answers, otherwise a private cluster whose URL the
// script records. SPOOL_TEST_POSTGRES_URL overrides both. A test that
// cannot reach a server fails and says how to get one; it never skips.
package pgtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// EnvURL overrides where the test server is: a URL whose database the
// tests may create databases from (the postgres database of a superuser).
const EnvURL = "SPOOL_TEST_POSTGRES_URL"

// DefaultURL is the server these machines run.
const DefaultURL = "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable"

// urlFile is where scripts/test-postgres.sh records the server it found or
// started, relative to the module's root.
const urlFile = ".test-servers/postgres.url"

var (
	serverOnce sync.Once
	serverURL  string
	serverErr  error
)

// ServerURL is the test server's administrative URL, checked to answer.
func ServerURL(t testing.TB) string {
	t.Helper()
	serverOnce.Do(func() {
		serverURL = findURL()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		conn, err := pgx.Connect(ctx, serverURL)
		if err != nil {
			serverErr = err
			return
		}
		serverErr = conn.Close(ctx)
	})
	if serverErr != nil {
		t.Fatalf("no PostgreSQL test server at %s: %v\n"+
			"`make test` starts one (it uses 127.0.0.1:5432 when that answers, or installs PostgreSQL and starts a private cluster: "+
			"scripts/test-postgres.sh); or point %s at a server where the tests may create databases", redact(serverURL), serverErr, EnvURL)
	}
	return serverURL
}

// findURL is where the test server should be.
func findURL() string {
	if u := os.Getenv(EnvURL); u != "" {
		return u
	}
	if root, ok := moduleRoot(); ok {
		if b, err := os.ReadFile(filepath.Join(root, urlFile)); err == nil {
			if u := strings.TrimSpace(string(b)); u != "" {
				return u
			}
		}
	}
	return DefaultURL
}

// moduleRoot is the directory holding go.mod above the working directory
// (a test runs in its package's directory).
func moduleRoot() (string, bool) {
	dir, err := os.Getwd()
	if err != nil {
		return "", false
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, true
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", false
		}
		dir = parent
	}
}

// NewDatabase creates an empty database for the test, dropped when it
// ends (with any connections left to it), and returns its URL.
func NewDatabase(t testing.TB) string {
	t.Helper()
	admin := ServerURL(t)
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	name := "spool_test_" + hex.EncodeToString(b)
	exec(t, admin, "CREATE DATABASE "+name)
	t.Cleanup(func() { exec(t, admin, "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)") })
	cfg, err := pgx.ParseConfig(admin)
	if err != nil {
		t.Fatal(err)
	}
	return withDatabase(admin, cfg.Database, name)
}

// withDatabase is url with its database changed from old to name.
func withDatabase(url, old, name string) string {
	if strings.Contains(url, "://") {
		// postgres://user@host:port/old?params
		scheme, rest, _ := strings.Cut(url, "://")
		hostPart, tail, _ := strings.Cut(rest, "/")
		_, params, hasParams := strings.Cut(tail, "?")
		u := scheme + "://" + hostPart + "/" + name
		if hasParams {
			u += "?" + params
		}
		return u
	}
	return url + " dbname=" + name // key=value form: the last one wins
}

func exec(t testing.TB, url, sql string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatalf("PostgreSQL test server: %v", err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, sql); err != nil {
		t.Fatalf("PostgreSQL test server: %s: %v", sql, err)
	}
}

// redact hides a URL's password.
func redact(url string) string {
	cfg, err := pgx.ParseConfig(url)
	if err != nil {
		return "(an unparsable URL)"
	}
	return fmt.Sprintf("%s@%s:%d/%s", cfg.User, cfg.Host, cfg.Port, cfg.Database)
}

// Connect opens a connection to url for the test, closed when it ends.
func Connect(t testing.TB, url string) *pgx.Conn {
	t.Helper()
	conn, err := pgx.Connect(context.Background(), url)
	if err != nil {
		t.Fatalf("PostgreSQL test server: %v", err)
	}
	t.Cleanup(func() { _ = conn.Close(context.Background()) })
	return conn
}
