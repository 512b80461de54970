package e2e

import (
	"os"
	"path/filepath"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/spool-run/spool/internal/store/backends/pgstore/pgtest"
)

// tokenKey is the task-token key of servers that share a store.
const tokenKey = "MDEyMzQ1Njc4OTAxMjM0NTY3ODkwMTIzNDU2Nzg5MDE="

// onEveryStore runs test once on each store a server runs on by itself:
// embedded SQLite, and PostgreSQL (a new database of the test server). The
// store is given as `spool server` arguments.
func onEveryStore(t *testing.T, test func(t *testing.T, store []string)) {
	for _, b := range []struct {
		name string
		args func(t *testing.T) []string
	}{
		{"sqlite", func(*testing.T) []string { return nil }},
		{"postgres", func(t *testing.T) []string { return configArgs(t, postgresConfig(pgtest.NewDatabase(t))) }},
	} {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			test(t, b.args(t))
		})
	}
}

// postgresConfig is the configuration of servers sharing the database at
// url.
func postgresConfig(url string) map[string]any {
	return map[string]any{
		"server": map[string]any{"token_key": tokenKey},
		"store":  map[string]any{"type": "postgres", "postgres": map[string]any{"url": url}},
	}
}

// configArgs writes cfg to a file and returns the server arguments that
// read it.
func configArgs(t *testing.T, cfg map[string]any) []string {
	t.Helper()
	raw, err := yaml.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "spool.yaml")
	if err := os.WriteFile(path, raw, 0o600); err != nil {
		t.Fatal(err)
	}
	return []string{"--config", path}
}
