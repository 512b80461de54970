package config

import (
	"encoding/base64"
	"errors"
	"fmt"
	"maps"
	"net"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spool-run/spool/internal/store"
	"github.com/spool-run/spool/internal/webhook"
)

// queueName is what a queue may be called (the service core checks the
// same for every request).
var queueName = regexp.MustCompile(`^[A-Za-z0-9._-]{1,80}$`)

// Validate reports every invalid setting, each named by its YAML path.
func (c *Config) Validate() error {
	var errs []error
	bad := func(field, format string, args ...any) {
		errs = append(errs, fmt.Errorf("%s: %s", field, fmt.Sprintf(format, args...)))
	}
	between := func(field string, v, lo, hi int64) {
		if v < lo || v > hi {
			bad(field, "must be between %d and %d, got %d", lo, hi, v)
		}
	}
	oneOf := func(field, v string, allowed ...string) {
		if !slices.Contains(allowed, v) {
			bad(field, "must be one of %s, got %q", strings.Join(allowed, ", "), v)
		}
	}

	if host, port, err := net.SplitHostPort(c.Server.Addr); err != nil {
		bad("server.addr", "must be host:port (for example 127.0.0.1:7070), got %q", c.Server.Addr)
	} else if p, err := strconv.Atoi(port); err != nil || p < 0 || p > 65535 {
		bad("server.addr", "port %q is not a port number", port)
	} else if host != "" && net.ParseIP(host) == nil && !validHostname(host) {
		bad("server.addr", "host %q is not an IP address or host name", host)
	}
	if c.Server.DataDir == "" {
		bad("server.data_dir", "must be set")
	}
	if c.Server.TokenKey != "" {
		if _, err := c.TokenKey(); err != nil {
			bad("server.token_key", "%v", err)
		}
	}
	between("server.shutdown_grace_seconds", int64(c.Server.ShutdownGraceSeconds), 0, 3600)

	oneOf("store.type", c.Store.Type, "sqlite", "memory", "postgres", "aws")
	oneOf("store.sqlite.synchronous", c.Store.SQLite.Synchronous, "full", "normal")
	var storeErr error
	switch c.Store.Type {
	case "aws":
		storeErr = c.Store.AWS.Validate()
	case "postgres":
		storeErr = c.Store.Postgres.Validate()
	}
	if storeErr != nil {
		errs = append(errs, storeErr)
	}
	if (c.Store.Type == "aws" || c.Store.Type == "postgres") && c.Server.TokenKey == "" {
		bad("server.token_key", "must be set with store.type %s: every server sharing the store must check the others' task tokens (generate one with: openssl rand -base64 32)", c.Store.Type)
	}

	if !slices.Contains([]string{"", BlobsDir, BlobsPostgres, BlobsS3}, c.Blobs.Type) {
		bad("blobs.type", "must be dir, postgres, s3, or empty to follow store.type, got %q", c.Blobs.Type)
	}
	switch c.BlobsType() {
	case BlobsPostgres:
		if c.Store.Type != "postgres" {
			if err := c.Store.Postgres.Validate(); err != nil {
				bad("blobs.type", "postgres keeps blobs in the database of store.postgres, which is not usable: %v", err)
			}
		}
	case BlobsS3:
		if err := c.Blobs.S3.Validate(); err != nil {
			errs = append(errs, err)
		}
	}

	between("artifacts.max_file_bytes", c.Artifacts.MaxFileBytes, 1, MaxArtifactBytes)
	between("artifacts.max_job_bytes", c.Artifacts.MaxJobBytes, 1, MaxArtifactBytes)
	between("artifacts.max_files", int64(c.Artifacts.MaxFiles), 1, 1000000)
	if a := c.Artifacts; a.MaxJobBytes < a.MaxFileBytes {
		bad("artifacts.max_job_bytes", "must be at least artifacts.max_file_bytes (%d), got %d", a.MaxFileBytes, a.MaxJobBytes)
	}

	between("jobs.max_attempts", int64(c.Jobs.MaxAttempts), 1, 100)
	between("jobs.lease_seconds", int64(c.Jobs.LeaseSeconds), 2, 43200)
	between("jobs.retention_days", int64(c.Jobs.RetentionDays), 0, 36500)
	between("jobs.max_stdin_bytes", c.Jobs.MaxStdinBytes, MinStdinBytesLimit, MaxStdinBytesLimit)

	b := c.Execution.Batching
	between("execution.batching.flush_interval_seconds", int64(b.FlushIntervalSeconds), 1, 60)
	between("execution.batching.max_batch_size", int64(b.MaxBatchSize), 1, 10000)
	between("execution.batching.max_batch_bytes", b.MaxBatchBytes, 1024, MaxBatchBytesLimit)
	between("execution.batching.playback_interval_millis", int64(b.PlaybackIntervalMillis), 0, 10000)
	between("execution.batching.job_min_flush_interval_millis", int64(b.JobMinFlushIntervalMillis), 1, 60000)
	between("execution.batching.job_max_flush_interval_seconds", int64(b.JobMaxFlushIntervalSeconds), 1, 3600)
	between("execution.batching.job_max_batch_size", int64(b.JobMaxBatchSize), 1, 10000)
	if b.JobMinFlushInterval() > b.JobMaxFlushInterval() && b.JobMaxFlushIntervalSeconds >= 1 {
		bad("execution.batching.job_min_flush_interval_millis", "must not be above execution.batching.job_max_flush_interval_seconds (%d s), got %d ms",
			b.JobMaxFlushIntervalSeconds, b.JobMinFlushIntervalMillis)
	}
	hb := c.Execution.HeartbeatIntervalSeconds
	between("execution.heartbeat_interval_seconds", int64(hb), 1, 3600)
	if hb >= 1 && c.Jobs.LeaseSeconds < 2*hb {
		bad("jobs.lease_seconds", "must be at least twice execution.heartbeat_interval_seconds (%d), so one late heartbeat does not lose the lease; got %d",
			hb, c.Jobs.LeaseSeconds)
	}

	if c.Auth.Disabled && !c.ListensOnLoopback() {
		bad("auth.disabled", "is refused: the server listens on %s, which is not loopback, so anyone who can reach it could run commands; create keys instead (spool keys create), or listen on 127.0.0.1", c.Server.Addr)
	}
	if c.Auth.AdminKey != "" && len(c.Auth.AdminKey) < 32 {
		bad("auth.admin_key", "is %d characters; use at least 32 random ones (spool keys create prints one)", len(c.Auth.AdminKey))
	}
	between("auth.session_hours", int64(c.Auth.SessionHours), 1, 24*90)
	if t := c.Server.TLS; t.Enabled() && (t.CertFile == "" || t.KeyFile == "") {
		bad("server.tls", "set both cert_file and key_file, or neither")
	}
	for _, h := range c.Server.PublicHosts {
		if strings.ContainsAny(h, ":/ ") || !validHostname(h) {
			bad("server.public_hosts", "%q is not a host name (give names alone, like spool.example.com, without scheme or port)", h)
		}
	}
	for _, o := range c.Server.CORSOrigins {
		if u, err := url.Parse(o); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || (u.Path != "" && u.Path != "/") {
			bad("server.cors_origins", "%q is not a web origin (like https://ci.example.com)", o)
		}
	}

	if !queueName.MatchString(c.Ingest.Queue) {
		bad("ingest.queue", "must be a queue name (1-80 letters, digits, '.', '_' or '-'), got %q", c.Ingest.Queue)
	}
	between("ingest.idle_timeout_seconds", int64(c.Ingest.IdleTimeoutSeconds), 0, 30*24*3600)
	between("ingest.max_body_bytes", c.Ingest.MaxBodyBytes, 1024, MaxIngestBodyBytes)
	// A body's records decode to at least three quarters of it (base64
	// undone), so a smaller limit would refuse bodies the other allows;
	// and one request must fit in what all may hold at once.
	if i := c.Ingest; i.MaxDecodedBytes < i.MaxBodyBytes {
		bad("ingest.max_decoded_bytes", "must be at least ingest.max_body_bytes (%d), got %d", i.MaxBodyBytes, i.MaxDecodedBytes)
	} else {
		between("ingest.max_decoded_bytes", i.MaxDecodedBytes, 1024, MaxIngestDecodedBytes)
	}
	if i := c.Ingest; i.MaxDecodingBytes < i.MaxDecodedBytes {
		bad("ingest.max_decoding_bytes", "must be at least ingest.max_decoded_bytes (%d), so that one request can be decoded; got %d", i.MaxDecodedBytes, i.MaxDecodingBytes)
	} else {
		between("ingest.max_decoding_bytes", i.MaxDecodingBytes, 1024, MaxIngestDecodingBytes)
	}

	for _, name := range slices.Sorted(maps.Keys(c.Ingest.Backfill)) {
		b, at := c.Ingest.Backfill[name], "ingest.backfill."+name
		switch {
		case !queueName.MatchString(name):
			bad(at, "a backfill's name must be 1-80 letters, digits, '.', '_' or '-'")
		case b.LogGroup == "":
			bad(at+".log_group", "name the CloudWatch Logs log group to read")
		case strings.Contains(b.LogGroup, ":"):
			bad(at+".log_group", "a log group's name has no ':' (%q looks like a source, group:stream: give log_group and log_stream)", b.LogGroup)
		}
		between(at+".every_seconds", int64(b.EverySeconds), 0, 7*24*3600)
		if b.EverySeconds > 0 && b.EverySeconds < 10 {
			bad(at+".every_seconds", "is %d; at least 10 (each round calls CloudWatch Logs, which AWS bills and throttles)", b.EverySeconds)
		}
		between(at+".lookback_seconds", int64(b.LookbackSeconds), 0, 30*24*3600)
		if b.LookbackSeconds > 0 && b.Lookback() < b.Every() {
			bad(at+".lookback_seconds", "is %d, shorter than every_seconds (%d): the events between rounds would never be read", b.LookbackSeconds, int(b.Every()/time.Second))
		}
		if e := b.Endpoint; e != "" {
			if u, err := url.Parse(e); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
				bad(at+".endpoint", "%q is not a URL (like http://127.0.0.1:5000)", e)
			}
		}
	}

	between("notify.timeout_seconds", int64(c.Notify.TimeoutSeconds), 0, 60)
	if c.Notify.Secret != "" && len(c.Notify.Secret) < 16 {
		bad("notify.secret", "is %d characters; use at least 16 random ones (for example: openssl rand -base64 32)", len(c.Notify.Secret))
	}
	if b := c.Notify.BaseURL; b != "" {
		if u, err := url.Parse(b); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.RawQuery != "" || u.Fragment != "" {
			bad("notify.base_url", "%q is not where people reach the server (like https://spool.example.com)", b)
		}
	}
	oneOf("schedules.missed", c.Schedules.Missed, "", "run_once", "skip")
	for _, name := range slices.Sorted(maps.Keys(c.Queues)) {
		q, at := c.Queues[name], "queues."+name
		if !queueName.MatchString(name) {
			bad(at, "%q is not a queue name (1-80 letters, digits, '.', '_' or '-')", name)
		}
		if len(q.Notify) > store.MaxNotify {
			bad(at+".notify", "lists %d URLs; at most %d", len(q.Notify), store.MaxNotify)
		}
		for _, u := range q.Notify {
			if err := webhook.CheckURL(u); err != nil {
				bad(at+".notify", "%v", err)
			}
		}
		if q.NotifySecret != "" && len(q.NotifySecret) < 16 {
			bad(at+".notify_secret", "is %d characters; use at least 16 random ones (for example: openssl rand -base64 32)", len(q.NotifySecret))
		}
	}

	oneOf("log.level", c.Log.Level, "debug", "info", "warn", "error")
	oneOf("log.format", c.Log.Format, "text", "json")
	return errors.Join(errs...)
}

// TokenKey decodes server.token_key (standard or URL base64).
func (c *Config) TokenKey() ([]byte, error) {
	s := strings.TrimSpace(c.Server.TokenKey)
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
		if key, err := enc.DecodeString(s); err == nil {
			if len(key) < 32 {
				return nil, fmt.Errorf("decodes to %d bytes; use at least 32 (for example: openssl rand -base64 32)", len(key))
			}
			return key, nil
		}
	}
	return nil, errors.New("is not base64 (for example: openssl rand -base64 32)")
}

func validHostname(h string) bool {
	if len(h) > 253 {
		return false
	}
	for _, label := range strings.Split(h, ".") {
		if label == "" || len(label) > 63 {
			return false
		}
		for _, r := range label {
			if !(r == '-' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z') {
				return false
			}
		}
	}
	return true
}

// ListensOnLoopback reports whether server.addr only takes connections from
// this machine.
func (c *Config) ListensOnLoopback() bool {
	host, _, err := net.SplitHostPort(c.Server.Addr)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
