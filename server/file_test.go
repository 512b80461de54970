package server

import (
	"context"
	"go/ast"
	"go/parser"
	"go/token"
	"log/slog"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/spool-run/spool/internal/config"
)

// everySetting sets every setting of the file to a value other than its
// default (and other than zero), so that a setting the mapping forgets, in
// either direction, shows.
const everySetting = `
server:
  addr: 127.0.0.1:7171
  data_dir: /var/lib/spool-test
  token_key: MDEyMzQ1Njc4OTAxMjM0NTY3ODkwMTIzNDU2Nzg5MDE=
  shutdown_grace_seconds: 45
  public_hosts: [spool.example.com]
  cors_origins: [https://ci.example.com]
  tls:
    cert_file: /etc/spool/cert.pem
    key_file: /etc/spool/key.pem
store:
  type: postgres
  sqlite:
    path: /var/lib/spool-test/other.db
    synchronous: normal
  postgres:
    url: postgres://spool:secret@db:5432/spool
    max_conns: 40
    min_conns: 4
    max_conn_lifetime: 2h
    max_conn_idle_time: 5m
    connect_timeout: 3s
  aws:
    region: eu-west-1
    endpoint: http://127.0.0.1:4566
    dynamodb_endpoint: http://127.0.0.1:8000
    sqs_endpoint: http://127.0.0.1:9324
    queues:
      builds: https://sqs.eu-west-1.amazonaws.com/123456789012/spool-builds
    queue_prefix: ci-
    queue_names: [builds, tests]
    auto_create_queues: true
    max_receive_count: 50
    jobs_table: ci_jobs
    events_table: ci_events
    events_ttl_days: 7
    compression: s2
    watch_poll_interval: 500ms
    dead_letter_check_interval: 2m
    max_retries: 3
jobs:
  max_attempts: 5
  lease_seconds: 90
  retention_days: 14
  max_stdin_bytes: 2147483648
execution:
  batching:
    flush_interval_seconds: 3
    max_batch_size: 100
    max_batch_bytes: 131072
    playback_interval_millis: 75
    job_min_flush_interval_millis: 250
    job_max_flush_interval_seconds: 30
    job_max_batch_size: 500
  heartbeat_interval_seconds: 20
auth:
  disabled: true
  admin_key: spool_0123456789abcdefghijklmnopqrstuvwxyz
  session_hours: 8
ingest:
  queue: logs
  idle_timeout_seconds: 300
  max_body_bytes: 1048576
  max_decoded_bytes: 2097152
  max_decoding_bytes: 4194304
  backfill:
    api:
      log_group: /ecs/api
      log_stream: web/1
      every_seconds: 600
      lookback_seconds: 7200
      region: eu-west-1
      endpoint: http://127.0.0.1:5000
queues:
  builds:
    notify: [https://ci.example.com/spool]
    notify_secret: builds-0123456789abcdef
notify:
  secret: 0123456789abcdef0123456789abcdef
  base_url: https://spool.example.com
  allow_private_addresses: true
  timeout_seconds: 5
schedules:
  missed: skip
blobs:
  type: s3
  dir: /var/lib/spool/blobs
  s3:
    bucket: spool-blobs
    prefix: team-a/
    region: eu-west-1
    endpoint: http://127.0.0.1:5000
    path_style: true
    part_size_mb: 16
scatter:
  s3:
    region: eu-west-2
    endpoint: http://127.0.0.1:5001
    path_style: true
log:
  level: debug
  format: json
`

// TestEverySettingRoundTrips: a file with every setting loads into Config
// with each duration in its unit, every field set, and Config goes back to
// exactly what the file says.
func TestEverySettingRoundTrips(t *testing.T) {
	path := filepath.Join(t.TempDir(), "spool.yaml")
	if err := os.WriteFile(path, []byte(everySetting), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := LoadConfig(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range []struct {
		key       string
		got, want time.Duration
	}{
		{"server.shutdown_grace_seconds", cfg.Server.ShutdownGrace, 45 * time.Second},
		{"store.postgres.max_conn_lifetime", cfg.Store.Postgres.MaxConnLifetime, 2 * time.Hour},
		{"store.postgres.max_conn_idle_time", cfg.Store.Postgres.MaxConnIdleTime, 5 * time.Minute},
		{"store.postgres.connect_timeout", cfg.Store.Postgres.ConnectTimeout, 3 * time.Second},
		{"store.aws.events_ttl_days", cfg.Store.AWS.EventsTTL, 7 * 24 * time.Hour},
		{"store.aws.watch_poll_interval", cfg.Store.AWS.WatchPollInterval, 500 * time.Millisecond},
		{"store.aws.dead_letter_check_interval", cfg.Store.AWS.DeadLetterCheckInterval, 2 * time.Minute},
		{"jobs.lease_seconds", cfg.Jobs.Lease, 90 * time.Second},
		{"jobs.retention_days", cfg.Jobs.Retention, 14 * 24 * time.Hour},
		{"execution.batching.flush_interval_seconds", cfg.Execution.Batching.FlushInterval, 3 * time.Second},
		{"execution.batching.playback_interval_millis", cfg.Execution.Batching.PlaybackInterval, 75 * time.Millisecond},
		{"execution.batching.job_min_flush_interval_millis", cfg.Execution.Batching.JobMinFlushInterval, 250 * time.Millisecond},
		{"execution.batching.job_max_flush_interval_seconds", cfg.Execution.Batching.JobMaxFlushInterval, 30 * time.Second},
		{"execution.heartbeat_interval_seconds", cfg.Execution.HeartbeatInterval, 20 * time.Second},
		{"auth.session_hours", cfg.Auth.SessionLength, 8 * time.Hour},
		{"ingest.idle_timeout_seconds", cfg.Ingest.IdleTimeout, 5 * time.Minute},
		{"notify.timeout_seconds", cfg.Notify.Timeout, 5 * time.Second},
	} {
		if d.got != d.want {
			t.Errorf("%s: %v, want %v", d.key, d.got, d.want)
		}
	}
	for _, f := range zeroFields(reflect.ValueOf(*cfg), "Config") {
		t.Errorf("%s is not set from the file", f)
	}
	if !cfg.Logger.Enabled(context.Background(), slog.LevelDebug) {
		t.Error("Logger does not log at log.level debug")
	}
	if _, ok := cfg.Logger.Handler().(*slog.JSONHandler); !ok {
		t.Errorf("Logger's handler is %T, want JSON for log.format json", cfg.Logger.Handler())
	}

	back, err := cfg.file()
	if err != nil {
		t.Fatal(err)
	}
	want, err := config.Load(path, os.LookupEnv)
	if err != nil {
		t.Fatal(err)
	}
	want.Log = config.Default().Log // the Logger's business, not the server's
	if !reflect.DeepEqual(back, want) {
		t.Fatalf("Config does not go back to the file's settings:\n got %+v\nwant %+v", back, want)
	}
}

// zeroFields lists the fields under v (a struct) left at their zero value,
// but for Logger and Meters, which the file does not set.
func zeroFields(v reflect.Value, path string) []string {
	var out []string
	for i := range v.NumField() {
		f := v.Type().Field(i)
		if !f.IsExported() || f.Name == "Meters" {
			continue
		}
		p := path + "." + f.Name
		if f.Type.Kind() == reflect.Struct {
			out = append(out, zeroFields(v.Field(i), p)...)
		} else if v.Field(i).IsZero() {
			out = append(out, p)
		}
	}
	return out
}

// TestDefaultsAreTheFiles: DefaultConfig is the file's defaults, to the
// letter.
func TestDefaultsAreTheFiles(t *testing.T) {
	got, err := DefaultConfig().file()
	if err != nil {
		t.Fatal(err)
	}
	if want := config.Default(); !reflect.DeepEqual(got, want) {
		t.Fatalf("DefaultConfig is not the file's defaults:\n got %+v\nwant %+v", got, want)
	}
	if d := DefaultConfig(); d.Jobs.Lease != 2*time.Minute || d.Logger != nil {
		t.Fatalf("DefaultConfig: lease %v, logger %v", d.Jobs.Lease, d.Logger)
	}
}

// TestEveryFieldNamesItsSetting: go doc shows, for every field, the
// setting of the file it is, and every setting of the file is a field's.
func TestEveryFieldNamesItsSetting(t *testing.T) {
	docs := fieldDocs(t)
	settings, sections := filePaths(t)
	named := map[string]bool{}
	for field, doc := range docs {
		if field == "Config.Logger" || field == "Config.Meters" {
			continue
		}
		m := yamlKeyRE.FindStringSubmatch(doc)
		if m == nil {
			t.Errorf("%s: its doc does not say its setting (YAML: path)", field)
			continue
		}
		key := strings.TrimRight(m[1], ".,;")
		named[key] = true
		// A setting of one entry of a mapping (queues.NAME.notify) is
		// the mapping's.
		if mapping, _, ok := strings.Cut(key, ".NAME."); ok {
			key = mapping
		}
		if !settings[key] && !sections[key] {
			t.Errorf("%s: its doc names %s, which is no setting", field, key)
		}
	}
	for k := range settings {
		if !strings.HasPrefix(k, "log.") && !named[k] {
			t.Errorf("the setting %s is no field's", k)
		}
	}
	for _, l := range []string{"log.level", "log.format"} {
		if !strings.Contains(docs["Config.Logger"], l) {
			t.Errorf("Config.Logger's doc does not say how LoadConfig uses %s", l)
		}
	}
}

var yamlKeyRE = regexp.MustCompile(`YAML:\s+(\S+)`)

// fieldDocs maps Type.Field to the doc comment of every field of the
// structs in config.go.
func fieldDocs(t *testing.T) map[string]string {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), "config.go", nil, parser.ParseComments)
	if err != nil {
		t.Fatal(err)
	}
	docs := map[string]string{}
	ast.Inspect(f, func(n ast.Node) bool {
		ts, ok := n.(*ast.TypeSpec)
		if !ok {
			return true
		}
		st, ok := ts.Type.(*ast.StructType)
		if !ok {
			return false
		}
		for _, fl := range st.Fields.List {
			for _, name := range fl.Names {
				if name.IsExported() {
					docs[ts.Name.Name+"."+name.Name] = fl.Doc.Text()
				}
			}
		}
		return false
	})
	if len(docs) < 50 {
		t.Fatalf("found only %d fields in config.go", len(docs))
	}
	return docs
}

// filePaths are the YAML paths of the file's settings and of its sections.
func filePaths(t *testing.T) (settings, sections map[string]bool) {
	t.Helper()
	b, err := yaml.Marshal(config.Default())
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := yaml.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	settings, sections = map[string]bool{}, map[string]bool{}
	var walk func(m map[string]any, prefix string)
	walk = func(m map[string]any, prefix string) {
		for k, v := range m {
			// store.aws.queues is a setting (a mapping of its own),
			// empty by default; sections are never empty.
			if sub, ok := v.(map[string]any); ok && len(sub) > 0 {
				sections[prefix+k] = true
				walk(sub, prefix+k+".")
				continue
			}
			settings[prefix+k] = true
		}
	}
	walk(doc, "")
	return settings, sections
}
