package config

import (
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/spool-run/spool/internal/blob/s3blob"
	"github.com/spool-run/spool/internal/store/backends/awsstore"
	"github.com/spool-run/spool/internal/store/backends/pgstore"
)

// exampleFile is the commented example configuration shipped for
// `spool server --config`.
const exampleFile = "../../examples/spool.yaml"

// TestExampleConfigLoads: the example runs as it is on a fresh machine, and
// what it sets is exactly the defaults, so reading it tells the truth about
// a server started with no configuration.
func TestExampleConfigLoads(t *testing.T) {
	cfg, err := Load(exampleFile, env())
	if err != nil {
		t.Fatalf("the example does not load: %v", err)
	}
	// Compared as YAML: an empty list in the file and a nil one in
	// Default() are the same setting.
	got, want := marshal(t, cfg), marshal(t, Default())
	if got != want {
		t.Fatalf("the example's values are not the defaults:\n%s", lineDiff(got, want))
	}
}

// TestExampleConfigNamesEverySetting: every setting of Config is in the
// example (the PostgreSQL and AWS ones commented out), each with a comment
// above it, and the commented-out ones are real settings with values that
// load, validate, and show the backends' defaults. A setting added to
// Config without a line in the example fails here.
func TestExampleConfigNamesEverySetting(t *testing.T) {
	data, err := os.ReadFile(exampleFile)
	if err != nil {
		t.Fatal(err)
	}
	lines := uncomment(string(data))

	keys := keyLines(lines)
	for _, r := range renames {
		if i, ok := keys[strings.Join(r.old, ".")]; ok {
			t.Errorf("line %d of %s gives %s, the old name of %s", i+1, exampleFile, strings.Join(r.old, "."), strings.Join(r.new, "."))
		}
	}
	for _, path := range settingPaths(reflect.TypeFor[Config](), nil) {
		name := strings.Join(path, ".")
		i, ok := keys[name]
		if !ok {
			t.Errorf("%s is not in %s (give it, commented out if it needs a choice, with its default)", name, exampleFile)
			continue
		}
		indent := len(lines[i]) - len(strings.TrimLeft(lines[i], " "))
		if i == 0 || !strings.HasPrefix(lines[i-1], strings.Repeat(" ", indent)+"#") {
			t.Errorf("%s (line %d of %s) has no comment line above it saying what it does", name, i+1, exampleFile)
		}
	}

	// With every setting uncommented, the file still decodes: no misspelt
	// name, no value of the wrong type hides behind a '#'.
	path := filepath.Join(t.TempDir(), "uncommented.yaml")
	if err := os.WriteFile(path, []byte(strings.Join(lines, "\n")), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := Read(path, env())
	if err != nil {
		t.Fatalf("the example with its commented-out settings uncommented does not read: %v", err)
	}

	// The commented-out sections show what the backends use when a field
	// is left out.
	p, a := cfg.Store.Postgres, cfg.Store.AWS
	for _, c := range []struct {
		name      string
		got, want any
	}{
		{"store.postgres.max_conns", p.MaxConns, int32(pgstore.DefaultMaxConns)},
		{"store.postgres.min_conns", p.MinConns, int32(pgstore.DefaultMinConns)},
		{"store.postgres.max_conn_lifetime", p.MaxConnLifetime, pgstore.DefaultMaxConnLifetime},
		{"store.postgres.max_conn_idle_time", p.MaxConnIdleTime, pgstore.DefaultMaxConnIdleTime},
		{"store.postgres.connect_timeout", p.ConnectTimeout, pgstore.DefaultConnectTimeout},
		{"store.aws.queue_prefix", a.QueuePrefix, awsstore.DefaultQueuePrefix},
		{"store.aws.max_receive_count", a.MaxReceiveCount, awsstore.DefaultMaxReceiveCount},
		{"store.aws.jobs_table", a.JobsTable, awsstore.DefaultJobsTable},
		{"store.aws.events_table", a.EventsTable, awsstore.DefaultEventsTable},
		{"store.aws.events_ttl_days", a.EventsTTLDays, awsstore.DefaultEventsTTLDays},
		{"store.aws.compression", a.Compression, awsstore.DefaultCompression},
		{"store.aws.watch_poll_interval", a.WatchPollInterval, awsstore.DefaultWatchPollInterval},
		{"store.aws.dead_letter_check_interval", a.DeadLetterCheckInterval, awsstore.DefaultDeadLetterCheckInterval},
		{"store.aws.max_retries", a.MaxRetries, awsstore.DefaultMaxRetries},
		{"blobs.s3.part_size_mb", cfg.Blobs.S3.PartSizeMB, s3blob.DefaultPartSizeMB},
	} {
		if !reflect.DeepEqual(c.got, c.want) {
			t.Errorf("%s is %v in the example, but its default is %v", c.name, c.got, c.want)
		}
	}

	// Someone who uncomments a backend's section and chooses it gets a
	// configuration the server accepts (with the shared token key that
	// both backends require).
	cfg.Server.TokenKey = "MDEyMzQ1Njc4OTAxMjM0NTY3ODkwMTIzNDU2Nzg5MDE="
	for _, typ := range []string{"postgres", "aws"} {
		cfg.Store.Type = typ
		if err := cfg.Validate(); err != nil {
			t.Errorf("the example's %s section, uncommented and chosen, is refused: %v", typ, err)
		}
	}
}

// settingRE is a setting's line: a lower-case name and a colon, then a
// value or nothing (a section). Prose comments never look like this: they
// start with a capital letter.
var settingRE = regexp.MustCompile(`^(\s*)([a-z][a-z0-9_]*):(\s|$)`)

// commentedRE is a comment line: its indentation and what follows "# ".
var commentedRE = regexp.MustCompile(`^(\s*)# (.*)$`)

// uncomment returns the example's lines with its commented-out settings
// (and the comments inside commented-out sections) put back where they
// would stand: "  #   url: x" becomes "    url: x". Other comments stay.
func uncomment(text string) []string {
	lines := strings.Split(text, "\n")
	for i, l := range lines {
		m := commentedRE.FindStringSubmatch(l)
		if m == nil {
			continue
		}
		if rest := m[2]; settingRE.MatchString(rest) || strings.HasPrefix(strings.TrimLeft(rest, " "), "#") {
			lines[i] = m[1] + rest
		}
	}
	return lines
}

// keyLines maps the YAML path of every key in lines to its line index,
// following indentation as YAML block mappings do.
func keyLines(lines []string) map[string]int {
	type level struct {
		indent int
		key    string
	}
	var stack []level
	out := map[string]int{}
	for i, l := range lines {
		m := settingRE.FindStringSubmatch(l)
		if m == nil {
			continue
		}
		indent := len(m[1])
		for len(stack) > 0 && stack[len(stack)-1].indent >= indent {
			stack = stack[:len(stack)-1]
		}
		stack = append(stack, level{indent, m[2]})
		path := make([]string, len(stack))
		for j, s := range stack {
			path[j] = s.key
		}
		out[strings.Join(path, ".")] = i
	}
	return out
}

// settingPaths lists the YAML path of every setting under type t, as
// walk does for the environment, but from the type alone and counting
// maps (store.aws.queues) too: a setting is any tagged field that is not
// a section.
func settingPaths(t reflect.Type, path []string) [][]string {
	var out [][]string
	for f := range t.Fields() {
		tag := strings.Split(f.Tag.Get("yaml"), ",")[0]
		if tag == "" || tag == "-" {
			continue
		}
		p := append(slices.Clone(path), tag)
		if slices.ContainsFunc(renames, func(r rename) bool { return slices.Equal(r.old, p) }) {
			continue // an old name, read but not shown
		}
		if f.Type.Kind() == reflect.Struct {
			out = append(out, settingPaths(f.Type, p)...)
			continue
		}
		out = append(out, p)
	}
	return out
}

func marshal(t *testing.T, c *Config) string {
	t.Helper()
	b, err := yaml.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// lineDiff lists the lines of got that want does not have, and the other
// way round.
func lineDiff(got, want string) string {
	g, w := strings.Split(got, "\n"), strings.Split(want, "\n")
	var b strings.Builder
	for _, l := range g {
		if !slices.Contains(w, l) {
			b.WriteString("  example: " + l + "\n")
		}
	}
	for _, l := range w {
		if !slices.Contains(g, l) {
			b.WriteString("  default: " + l + "\n")
		}
	}
	return b.String()
}
