package cli

import (
	"io"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/spool-run/spool/internal/config"
	"github.com/spool-run/spool/internal/store/backends/pgstore"
	"github.com/spool-run/spool/worker"
)

// The facts the pages state about a worker and a server, held against
// what the binary does, so that a change to one fails until the other
// follows.

// page is the text of a page of the repository, from this package.
func page(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile("../../" + name)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestDocumentedJobEnvironment: usage.md names exactly the worker's
// variables a job gets without --pass-env.
func TestDocumentedJobEnvironment(t *testing.T) {
	text := page(t, "docs/usage.md")
	m := regexp.MustCompile("(?s)Jobs get the worker's (.*?), spool's").FindStringSubmatch(text)
	if m == nil {
		t.Fatal(`docs/usage.md no longer says "Jobs get the worker's …, spool's": where does it list the variables a job gets?`)
	}
	var named []string
	for _, v := range regexp.MustCompile("`([^`]+)`").FindAllStringSubmatch(m[1], -1) {
		named = append(named, v[1])
	}
	passed := worker.DefaultPassEnv()
	slices.Sort(named)
	slices.Sort(passed)
	if !slices.Equal(named, passed) {
		t.Errorf("docs/usage.md says jobs get %v of the worker's environment; the worker passes %v", named, passed)
	}
}

// TestDocumentedGracefulStop: usage.md says what SIGTERM gives running
// jobs by the worker's flag and its default.
func TestDocumentedGracefulStop(t *testing.T) {
	text := strings.Join(strings.Fields(page(t, "docs/usage.md")), " ")
	root := newRoot(&env{in: strings.NewReader(""), out: io.Discard, errOut: io.Discard})
	w, _, err := root.Find([]string{"worker"})
	if err != nil {
		t.Fatal(err)
	}
	grace := w.Flags().Lookup("grace")
	if grace == nil {
		t.Fatal("spool worker has no --grace: say in docs/usage.md what SIGTERM gives running jobs")
	}
	want := "`--grace` (default " + grace.DefValue + ") to finish"
	if !strings.Contains(text, "A worker given SIGTERM") || !strings.Contains(text, want) {
		t.Errorf("docs/usage.md does not say that a worker given SIGTERM gives running jobs %s", want)
	}
}

// TestConfigurationPageShowsDefaults: the settings shown in
// configuration.md are real settings, each with its default, and the page
// points at the example that has all of them.
func TestConfigurationPageShowsDefaults(t *testing.T) {
	text := page(t, "docs/configuration.md")
	m := regexp.MustCompile("(?s)```yaml\n(.*?)```").FindStringSubmatch(text)
	if m == nil {
		t.Fatal("docs/configuration.md has no yaml block")
	}
	cfg, err := config.Parse([]byte(m[1]), nil)
	if err != nil {
		t.Fatalf("docs/configuration.md's settings do not load: %v", err)
	}
	// The page shows PostgreSQL's pool as the store sizes it when the
	// setting is left at 0.
	if cfg.Store.Postgres.MaxConns == pgstore.DefaultMaxConns {
		cfg.Store.Postgres.MaxConns = 0
	}
	// It shows one queue's settings and one scheduled backfill as
	// examples; by default there are none (the examples still had to load
	// above).
	cfg.Queues = config.Default().Queues
	cfg.Ingest.Backfill = config.Default().Ingest.Backfill
	got, want := yamlOf(t, cfg), yamlOf(t, config.Default())
	if got != want {
		t.Errorf("docs/configuration.md shows values that are not the defaults:\n--- page\n%s\n--- defaults\n%s", got, want)
	}
	if !strings.Contains(text, "(../examples/spool.yaml)") {
		t.Error("docs/configuration.md does not link examples/spool.yaml, where every setting is")
	}
}

// yamlOf is cfg as YAML: an empty list on the page and none in the
// defaults are the same setting.
func yamlOf(t *testing.T, cfg *config.Config) string {
	t.Helper()
	b, err := yaml.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
