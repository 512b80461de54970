package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func env(kv ...string) func(string) (string, bool) {
	m := map[string]string{}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
}

func TestDefaults(t *testing.T) {
	c, err := Parse(nil, env())
	if err != nil {
		t.Fatal(err)
	}
	b := c.ExecutionConfig().GetBatching()
	if b.GetFlushIntervalSeconds() != 2 || b.GetMaxBatchSize() != 50 || b.GetMaxBatchBytes() != 256<<10 || b.GetPlaybackIntervalMillis() != 50 {
		t.Fatalf("batching defaults %v", b)
	}
	if c.ExecutionConfig().GetHeartbeatIntervalSeconds() != 30 || c.Server.Addr != "127.0.0.1:7070" || c.Server.DataDir != "./spool-data" || c.Store.Type != "sqlite" {
		t.Fatalf("defaults %+v", c)
	}
}

func TestFileThenEnv(t *testing.T) {
	path := filepath.Join(t.TempDir(), "spool.yaml")
	yaml := `
server:
  addr: 0.0.0.0:9000
execution:
  batching:
    max_batch_size: 100
    flush_interval_seconds: 5
log:
  format: json
`
	if err := os.WriteFile(path, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	c, err := Load(path, env("SPOOL_EXECUTION_BATCHING_MAX_BATCH_SIZE", "200", "SPOOL_STORE_TYPE", "memory"))
	if err != nil {
		t.Fatal(err)
	}
	if c.Server.Addr != "0.0.0.0:9000" || c.Execution.Batching.FlushIntervalSeconds != 5 || c.Log.Format != "json" {
		t.Fatalf("file not applied: %+v", c)
	}
	if c.Execution.Batching.MaxBatchSize != 200 || c.Store.Type != "memory" {
		t.Fatalf("environment does not override the file: %+v", c)
	}
	if c.Execution.Batching.MaxBatchBytes != 256<<10 {
		t.Fatal("a setting absent from the file lost its default")
	}
}

func TestBadConfigNamesTheField(t *testing.T) {
	cases := []struct {
		name, yaml string
		env        []string
		want       string
	}{
		{"unknown key", "execution:\n  batching:\n    max_batch_sise: 5\n", nil, "unknown setting execution.batching.max_batch_sise (line 3)"},
		{"wrong type", "execution:\n  batching:\n    max_batch_size: lots\n", nil, `execution.batching.max_batch_size: want a whole number, got "lots" (line 3)`},
		{"wrong type, flow style", `jobs: {max_attempts: "x"}`, nil, `jobs.max_attempts: want a whole number, got "x" (line 1)`},
		{"duration", "store:\n  aws:\n    watch_poll_interval: often\n", nil, `store.aws.watch_poll_interval: want a duration such as 250ms or 2s, got "often"`},
		{"list", "store:\n  aws:\n    queue_names: builds\n", nil, `store.aws.queue_names: want a list of text, got "builds"`},
		{"section", "jobs: 3\n", nil, `jobs: want a section of settings`},
		{"not a mapping", "- a\n- b\n", nil, `the file must be a mapping of settings`},
		{"not yaml", "server: [\n", nil, "not valid YAML"},
		{"zero batch", "execution:\n  batching:\n    max_batch_size: 0\n", nil, "execution.batching.max_batch_size: must be between 1 and 10000, got 0"},
		{"huge bytes", "execution:\n  batching:\n    max_batch_bytes: 999999999999\n", nil, "execution.batching.max_batch_bytes"},
		{"batch larger than a publish holds", "execution:\n  batching:\n    max_batch_bytes: 16777216\n", nil, "execution.batching.max_batch_bytes: must be between 1024 and 8388608, got 16777216"},
		{"flush", "execution:\n  batching:\n    flush_interval_seconds: -1\n", nil, "execution.batching.flush_interval_seconds"},
		{"store", "store:\n  type: oracle\n", nil, `store.type: must be one of sqlite, memory, postgres, aws, got "oracle"`},
		{"postgres without a shared key", "store:\n  type: postgres\n  postgres:\n    url: postgres://db/spool\n", nil, "server.token_key: must be set with store.type postgres"},
		{"postgres without a url", "server:\n  token_key: MDEyMzQ1Njc4OTAxMjM0NTY3ODkwMTIzNDU2Nzg5MDE=\nstore:\n  type: postgres\n", nil, "store.postgres.url is not set"},
		{"postgres pool", "server:\n  token_key: MDEyMzQ1Njc4OTAxMjM0NTY3ODkwMTIzNDU2Nzg5MDE=\nstore:\n  type: postgres\n  postgres:\n    url: postgres://db/spool\n    max_conns: -2\n", nil, "store.postgres.max_conns must not be negative"},
		{"aws without a shared key", "store:\n  type: aws\n", nil, "server.token_key: must be set with store.type aws"},
		{"aws endpoint", "server:\n  token_key: MDEyMzQ1Njc4OTAxMjM0NTY3ODkwMTIzNDU2Nzg5MDE=\nstore:\n  type: aws\n  aws:\n    endpoint: not a url\n", nil, "store.aws.endpoint"},
		{"bad env duration", "", []string{"SPOOL_STORE_AWS_WATCH_POLL_INTERVAL", "soon"}, "not a duration"},
		{"addr", "server:\n  addr: localhost\n", nil, "server.addr"},
		{"port", "server:\n  addr: 127.0.0.1:http\n", nil, "server.addr"},
		{"lease vs heartbeat", "jobs:\n  lease_seconds: 40\n", nil, "jobs.lease_seconds: must be at least twice"},
		{"lease under its old name vs heartbeat", "jobs:\n  visibility_timeout_seconds: 40\n", nil, "jobs.lease_seconds: must be at least twice"},
		{"short key", "server:\n  token_key: c2hvcnQ=\n", nil, "server.token_key: decodes to 5 bytes"},
		{"bad key", "server:\n  token_key: '!!!'\n", nil, "server.token_key: is not base64"},
		{"log level", "log:\n  level: loud\n", nil, "log.level"},
		{"ingest queue", "ingest:\n  queue: 'logs of api'\n", nil, `ingest.queue: must be a queue name (1-80 letters, digits, '.', '_' or '-'), got "logs of api"`},
		{"ingest idle", "ingest:\n  idle_timeout_seconds: -1\n", nil, "ingest.idle_timeout_seconds: must be between 0 and 2592000, got -1"},
		{"ingest body", "", []string{"SPOOL_INGEST_MAX_BODY_BYTES", "100000000"}, "ingest.max_body_bytes: must be between 1024 and 67108864, got 100000000"},
		{"ingest decoded under body", "ingest:\n  max_body_bytes: 67108864\n  max_decoded_bytes: 33554432\n", nil, "ingest.max_decoded_bytes: must be at least ingest.max_body_bytes (67108864), got 33554432"},
		{"ingest decoded", "", []string{"SPOOL_INGEST_MAX_DECODED_BYTES", "2147483648"}, "ingest.max_decoded_bytes: must be between 1024 and 1073741824, got 2147483648"},
		{"backfill without a group", "ingest:\n  backfill:\n    api:\n      every_seconds: 60\n", nil, "ingest.backfill.api.log_group: name the CloudWatch Logs log group to read"},
		{"backfill source as group", "ingest:\n  backfill:\n    api:\n      log_group: '/ecs/api:web/1'\n", nil, "ingest.backfill.api.log_group: a log group's name has no ':'"},
		{"backfill too often", "ingest:\n  backfill:\n    api:\n      log_group: /ecs/api\n      every_seconds: 5\n", nil, "ingest.backfill.api.every_seconds: is 5; at least 10"},
		{"backfill lookback under every", "ingest:\n  backfill:\n    api:\n      log_group: /ecs/api\n      every_seconds: 600\n      lookback_seconds: 300\n", nil, "ingest.backfill.api.lookback_seconds: is 300, shorter than every_seconds (600)"},
		{"backfill endpoint", "ingest:\n  backfill:\n    api:\n      log_group: /ecs/api\n      endpoint: 127.0.0.1:5000\n", nil, "ingest.backfill.api.endpoint: \"127.0.0.1:5000\" is not a URL"},
		{"ingest decoding under decoded", "ingest:\n  max_decoding_bytes: 1048576\n", nil, "ingest.max_decoding_bytes: must be at least ingest.max_decoded_bytes (67108864), so that one request can be decoded; got 1048576"},
		{"bad env number", "", []string{"SPOOL_JOBS_MAX_ATTEMPTS", "three"}, `SPOOL_JOBS_MAX_ATTEMPTS="three": not a whole number`},
		{"bad env value", "", []string{"SPOOL_JOBS_MAX_ATTEMPTS", "0"}, "jobs.max_attempts: must be between 1 and 100, got 0"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Parse([]byte(c.yaml), env(c.env...))
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %v, want it to contain %q", err, c.want)
			}
		})
	}
}

func TestAllProblemsReported(t *testing.T) {
	_, err := Parse([]byte("jobs:\n  max_attempts: 0\nlog:\n  format: xml\n"), env())
	if err == nil || !strings.Contains(err.Error(), "jobs.max_attempts") || !strings.Contains(err.Error(), "log.format") {
		t.Fatalf("want both problems named, got %v", err)
	}
}

func TestAWSStore(t *testing.T) {
	yaml := `
server:
  token_key: MDEyMzQ1Njc4OTAxMjM0NTY3ODkwMTIzNDU2Nzg5MDE=
store:
  type: aws
  aws:
    region: eu-west-1
    queues:
      builds: https://sqs.eu-west-1.amazonaws.com/123456789012/spool-builds
    jobs_table: my_jobs
`
	c, err := Parse([]byte(yaml), env("SPOOL_STORE_AWS_WATCH_POLL_INTERVAL", "500ms", "SPOOL_STORE_AWS_EVENTS_TTL_DAYS", "7"))
	if err != nil {
		t.Fatal(err)
	}
	a := c.Store.AWS
	if a.Region != "eu-west-1" || a.JobsTable != "my_jobs" || a.Queues["builds"] == "" || a.WatchPollInterval.Milliseconds() != 500 || a.EventsTTLDays != 7 {
		t.Fatalf("aws config %+v", a)
	}
}

func TestTokenKey(t *testing.T) {
	c, err := Parse([]byte("server:\n  token_key: MDEyMzQ1Njc4OTAxMjM0NTY3ODkwMTIzNDU2Nzg5MDE=\n"), env())
	if err != nil {
		t.Fatal(err)
	}
	key, err := c.TokenKey()
	if err != nil || string(key) != "01234567890123456789012345678901" {
		t.Fatalf("key %q err %v", key, err)
	}
}

func TestMissingFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "nope.yaml")
	_, err := Load(path, env())
	if err == nil || err.Error() != "config "+path+": no such file" {
		t.Fatalf("err %v", err)
	}
}

// A problem with the file is prefixed with its name once, whether it is
// found reading the file or validating what it says.
func TestFileNamedOnce(t *testing.T) {
	dir := t.TempDir()
	for content, want := range map[string]string{
		"jobs:\n  max_attempts: x\n": `jobs.max_attempts: want a whole number, got "x" (line 2)`,
		"jobs:\n  max_attempts: 0\n": "jobs.max_attempts: must be between 1 and 100, got 0",
	} {
		path := filepath.Join(dir, "bad1.yaml")
		if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		_, err := Load(path, env())
		if err == nil || err.Error() != "config "+path+": "+want {
			t.Errorf("%q: got %v, want %q", content, err, "config "+path+": "+want)
		}
	}
}

func TestUnknownEnv(t *testing.T) {
	got := UnknownEnv([]string{
		"PATH=/bin",
		"SPOOL_JOBS_MAX_ATEMPTS=5",
		"SPOOL_EXECUTION_BATCHING_MAXBATCHSIZE=10",
		"SPOOL_SERVER=http://example.com",
		"SPOOL_JOB_ID=x",
		"SPOOL_JOBS_MAX_ATTEMPTS=4",
		"SPOOL_TOTALLY_UNRELATED_THING=1",
	})
	want := []string{
		"SPOOL_JOBS_MAX_ATEMPTS is not a spool setting and is ignored; did you mean SPOOL_JOBS_MAX_ATTEMPTS?",
		"SPOOL_EXECUTION_BATCHING_MAXBATCHSIZE is not a spool setting and is ignored; did you mean SPOOL_EXECUTION_BATCHING_MAX_BATCH_SIZE?",
		"SPOOL_TOTALLY_UNRELATED_THING is not a spool setting and is ignored (spool server --help lists the variables)",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("got\n  %s\nwant\n  %s", strings.Join(got, "\n  "), strings.Join(want, "\n  "))
	}
}

func TestEveryScalarHasAnEnvName(t *testing.T) {
	seen := map[string]bool{}
	names := EnvNames()
	for _, n := range names {
		if seen[n] {
			t.Fatalf("two settings share %s", n)
		}
		seen[n] = true
	}
	for _, want := range []string{"SPOOL_SERVER_ADDR", "SPOOL_SERVER_DATA_DIR", "SPOOL_EXECUTION_HEARTBEAT_INTERVAL_SECONDS", "SPOOL_STORE_SQLITE_PATH"} {
		if !seen[want] {
			t.Fatalf("%s is not an override (have %v)", want, names)
		}
	}
}

// The PostgreSQL store is chosen and pointed at its database by the
// environment alone, as a container would run it.
func TestPostgresFromTheEnvironment(t *testing.T) {
	c, err := Parse(nil, env(
		"SPOOL_STORE_TYPE", "postgres",
		"SPOOL_STORE_POSTGRES_URL", "postgres://spool:secret@db:5432/spool",
		"SPOOL_STORE_POSTGRES_MAX_CONNS", "40",
		"SPOOL_STORE_POSTGRES_MAX_CONN_IDLE_TIME", "30s",
		"SPOOL_SERVER_TOKEN_KEY", "MDEyMzQ1Njc4OTAxMjM0NTY3ODkwMTIzNDU2Nzg5MDE=",
	))
	if err != nil {
		t.Fatal(err)
	}
	p := c.Store.Postgres
	if c.Store.Type != "postgres" || p.URL != "postgres://spool:secret@db:5432/spool" || p.MaxConns != 40 || p.MaxConnIdleTime != 30*time.Second {
		t.Fatalf("store %q, postgres %+v", c.Store.Type, p)
	}
}
