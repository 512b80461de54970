package server

import (
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"time"

	"github.com/spool-run/spool/internal/blob/s3blob"
	"github.com/spool-run/spool/internal/config"
	"github.com/spool-run/spool/internal/s3items"
	"github.com/spool-run/spool/internal/store/backends/awsstore"
	"github.com/spool-run/spool/internal/store/backends/pgstore"
)

// The configuration has two shapes: the file's (package config: YAML keys,
// whole seconds, hours and days, the SPOOL_* variables, validation), which
// the server's insides read, and Config, the Go one, with durations. This
// file is the one place that maps one to the other, both ways; a test
// holds the two directions to each other for every setting.

const day = 24 * time.Hour

// fromFile is the Go shape of a configuration read from a file.
func fromFile(f *config.Config) *Config {
	s, st, a, p := f.Server, f.Store, f.Store.AWS, f.Store.Postgres
	b := f.Execution.Batching
	return &Config{
		Server: Serving{
			Addr:          s.Addr,
			DataDir:       s.DataDir,
			TokenKey:      s.TokenKey,
			ShutdownGrace: s.ShutdownGrace(),
			PublicHosts:   slices.Clone(s.PublicHosts),
			CORSOrigins:   slices.Clone(s.CORSOrigins),
			TLS:           TLS{CertFile: s.TLS.CertFile, KeyFile: s.TLS.KeyFile},
		},
		Store: Store{
			Type:   st.Type,
			SQLite: SQLite{Path: st.SQLite.Path, Synchronous: st.SQLite.Synchronous},
			Postgres: Postgres{
				URL:             p.URL,
				MaxConns:        int(p.MaxConns),
				MinConns:        int(p.MinConns),
				MaxConnLifetime: p.MaxConnLifetime,
				MaxConnIdleTime: p.MaxConnIdleTime,
				ConnectTimeout:  p.ConnectTimeout,
			},
			AWS: AWS{
				Region:                  a.Region,
				Endpoint:                a.Endpoint,
				DynamoDBEndpoint:        a.DynamoDBEndpoint,
				SQSEndpoint:             a.SQSEndpoint,
				Queues:                  maps.Clone(a.Queues),
				QueuePrefix:             a.QueuePrefix,
				QueueNames:              slices.Clone(a.QueueNames),
				AutoCreateQueues:        a.AutoCreateQueues,
				MaxReceiveCount:         a.MaxReceiveCount,
				JobsTable:               a.JobsTable,
				EventsTable:             a.EventsTable,
				Compression:             a.Compression,
				EventsTTL:               time.Duration(a.EventsTTLDays) * day,
				WatchPollInterval:       a.WatchPollInterval,
				DeadLetterCheckInterval: a.DeadLetterCheckInterval,
				MaxRetries:              a.MaxRetries,
			},
		},
		Jobs: Jobs{MaxAttempts: f.Jobs.MaxAttempts, Lease: f.Jobs.Lease(), Retention: f.Jobs.Retention(), MaxStdinBytes: f.Jobs.MaxStdinBytes},
		Execution: Execution{
			Batching: Batching{
				FlushInterval:    time.Duration(b.FlushIntervalSeconds) * time.Second,
				MaxBatchSize:     b.MaxBatchSize,
				MaxBatchBytes:    b.MaxBatchBytes,
				PlaybackInterval: time.Duration(b.PlaybackIntervalMillis) * time.Millisecond,

				JobMinFlushInterval: b.JobMinFlushInterval(),
				JobMaxFlushInterval: b.JobMaxFlushInterval(),
				JobMaxBatchSize:     b.JobMaxBatchSize,
			},
			HeartbeatInterval: f.Execution.HeartbeatInterval(),
		},
		Auth: Auth{Disabled: f.Auth.Disabled, AdminKey: f.Auth.AdminKey, SessionLength: time.Duration(f.Auth.SessionHours) * time.Hour},
		Ingest: Ingest{
			Queue:            f.Ingest.Queue,
			IdleTimeout:      f.Ingest.IdleTimeout(),
			MaxBodyBytes:     f.Ingest.MaxBodyBytes,
			MaxDecodedBytes:  f.Ingest.MaxDecodedBytes,
			MaxDecodingBytes: f.Ingest.MaxDecodingBytes,
			Backfill:         backfillsOf(f.Ingest.Backfill),
		},
		Queues: queuesOf(f.Queues),
		Notify: Notify{Secret: f.Notify.Secret, BaseURL: f.Notify.BaseURL, AllowPrivateAddresses: f.Notify.AllowPrivateAddresses,
			Timeout: time.Duration(f.Notify.TimeoutSeconds) * time.Second},
		Schedules: Schedules{Missed: f.Schedules.Missed},
		Blobs: Blobs{Type: f.Blobs.Type, Dir: f.Blobs.Dir, S3: BlobsS3{Bucket: f.Blobs.S3.Bucket, Prefix: f.Blobs.S3.Prefix,
			Region: f.Blobs.S3.Region, Endpoint: f.Blobs.S3.Endpoint, PathStyle: f.Blobs.S3.PathStyle, PartSizeMB: f.Blobs.S3.PartSizeMB}},
		Scatter:   Scatter{S3: ScatterS3{Region: f.Scatter.S3.Region, Endpoint: f.Scatter.S3.Endpoint, PathStyle: f.Scatter.S3.PathStyle}},
		Artifacts: Artifacts{MaxFileBytes: f.Artifacts.MaxFileBytes, MaxJobBytes: f.Artifacts.MaxJobBytes, MaxFiles: f.Artifacts.MaxFiles},
		warnings:  slices.Clone(f.Warnings),
	}
}

// file is c in the file's shape, for the server's insides. A duration
// that is not a whole number of its setting's unit, or a number too large
// for it, is an error naming the setting; whether the values are good is
// then the file's validation's to say.
func (c *Config) file() (*config.Config, error) {
	u := units{}
	s, st, a, p := c.Server, c.Store, c.Store.AWS, c.Store.Postgres
	b := c.Execution.Batching
	f := &config.Config{
		Server: config.Server{
			Addr:                 s.Addr,
			DataDir:              s.DataDir,
			TokenKey:             s.TokenKey,
			ShutdownGraceSeconds: u.whole("server.shutdown_grace_seconds", s.ShutdownGrace, time.Second),
			PublicHosts:          slices.Clone(s.PublicHosts),
			CORSOrigins:          slices.Clone(s.CORSOrigins),
			TLS:                  config.TLS{CertFile: s.TLS.CertFile, KeyFile: s.TLS.KeyFile},
		},
		Store: config.Store{
			Type:   st.Type,
			SQLite: config.SQLite{Path: st.SQLite.Path, Synchronous: st.SQLite.Synchronous},
			Postgres: pgstore.Config{
				URL:             p.URL,
				MaxConns:        u.int32("store.postgres.max_conns", p.MaxConns),
				MinConns:        u.int32("store.postgres.min_conns", p.MinConns),
				MaxConnLifetime: p.MaxConnLifetime,
				MaxConnIdleTime: p.MaxConnIdleTime,
				ConnectTimeout:  p.ConnectTimeout,
			},
			AWS: awsstore.Config{
				Region:                  a.Region,
				Endpoint:                a.Endpoint,
				DynamoDBEndpoint:        a.DynamoDBEndpoint,
				SQSEndpoint:             a.SQSEndpoint,
				Queues:                  maps.Clone(a.Queues),
				QueuePrefix:             a.QueuePrefix,
				QueueNames:              slices.Clone(a.QueueNames),
				AutoCreateQueues:        a.AutoCreateQueues,
				MaxReceiveCount:         a.MaxReceiveCount,
				JobsTable:               a.JobsTable,
				EventsTable:             a.EventsTable,
				Compression:             a.Compression,
				EventsTTLDays:           u.whole("store.aws.events_ttl_days", a.EventsTTL, day),
				WatchPollInterval:       a.WatchPollInterval,
				DeadLetterCheckInterval: a.DeadLetterCheckInterval,
				MaxRetries:              a.MaxRetries,
			},
		},
		Jobs: config.Jobs{
			MaxAttempts:   c.Jobs.MaxAttempts,
			LeaseSeconds:  u.whole("jobs.lease_seconds", c.Jobs.Lease, time.Second),
			RetentionDays: u.whole("jobs.retention_days", c.Jobs.Retention, day),
			MaxStdinBytes: c.Jobs.MaxStdinBytes,
		},
		Execution: config.Execution{
			Batching: config.Batching{
				FlushIntervalSeconds:   u.whole("execution.batching.flush_interval_seconds", b.FlushInterval, time.Second),
				MaxBatchSize:           b.MaxBatchSize,
				MaxBatchBytes:          b.MaxBatchBytes,
				PlaybackIntervalMillis: u.whole("execution.batching.playback_interval_millis", b.PlaybackInterval, time.Millisecond),

				JobMinFlushIntervalMillis:  u.whole("execution.batching.job_min_flush_interval_millis", b.JobMinFlushInterval, time.Millisecond),
				JobMaxFlushIntervalSeconds: u.whole("execution.batching.job_max_flush_interval_seconds", b.JobMaxFlushInterval, time.Second),
				JobMaxBatchSize:            b.JobMaxBatchSize,
			},
			HeartbeatIntervalSeconds: u.whole("execution.heartbeat_interval_seconds", c.Execution.HeartbeatInterval, time.Second),
		},
		Auth: config.Auth{
			Disabled:     c.Auth.Disabled,
			AdminKey:     c.Auth.AdminKey,
			SessionHours: u.whole("auth.session_hours", c.Auth.SessionLength, time.Hour),
		},
		Ingest: config.Ingest{
			Queue:              c.Ingest.Queue,
			IdleTimeoutSeconds: u.whole("ingest.idle_timeout_seconds", c.Ingest.IdleTimeout, time.Second),
			MaxBodyBytes:       c.Ingest.MaxBodyBytes,
			MaxDecodedBytes:    c.Ingest.MaxDecodedBytes,
			MaxDecodingBytes:   c.Ingest.MaxDecodingBytes,
			Backfill:           c.fileBackfills(&u),
		},
		Queues: c.fileQueues(),
		Notify: config.Notify{Secret: c.Notify.Secret, BaseURL: c.Notify.BaseURL, AllowPrivateAddresses: c.Notify.AllowPrivateAddresses,
			TimeoutSeconds: u.whole("notify.timeout_seconds", c.Notify.Timeout, time.Second)},
		Schedules: config.Schedules{Missed: c.Schedules.Missed},
		Blobs: config.Blobs{Type: c.Blobs.Type, Dir: c.Blobs.Dir, S3: s3blob.Config{Bucket: c.Blobs.S3.Bucket, Prefix: c.Blobs.S3.Prefix,
			Region: c.Blobs.S3.Region, Endpoint: c.Blobs.S3.Endpoint, PathStyle: c.Blobs.S3.PathStyle, PartSizeMB: c.Blobs.S3.PartSizeMB}},
		Scatter:   config.Scatter{S3: s3items.Config{Region: c.Scatter.S3.Region, Endpoint: c.Scatter.S3.Endpoint, PathStyle: c.Scatter.S3.PathStyle}},
		Artifacts: config.Artifacts{MaxFileBytes: c.Artifacts.MaxFileBytes, MaxJobBytes: c.Artifacts.MaxJobBytes, MaxFiles: c.Artifacts.MaxFiles},
		// The server's logs are Logger's: the file's log settings only
		// say how LoadConfig makes it.
		Log:      config.Default().Log,
		Warnings: slices.Clone(c.warnings),
	}
	if err := errors.Join(u.errs...); err != nil {
		return nil, err
	}
	return f, nil
}

// units converts numbers to the file's units, gathering what does not fit.
type units struct{ errs []error }

// whole is d in units of unit, which it must be a whole number of.
func (u *units) whole(key string, d, unit time.Duration) int {
	if d%unit != 0 {
		u.errs = append(u.errs, fmt.Errorf("%s: %v is not a whole number of %s", key, d, unitName[unit]))
	}
	return int(d / unit)
}

var unitName = map[time.Duration]string{time.Millisecond: "milliseconds", time.Second: "seconds", time.Hour: "hours", day: "days"}

// int32 is n, which must fit in an int32.
func (u *units) int32(key string, n int) int32 {
	if n < math.MinInt32 || n > math.MaxInt32 {
		u.errs = append(u.errs, fmt.Errorf("%s: %d is too large", key, n))
	}
	return int32(n)
}

// queuesOf is the file's queues as Config holds them (nil when none).
func queuesOf(qs map[string]config.Queue) map[string]QueueConfig {
	if qs == nil {
		return nil
	}
	out := make(map[string]QueueConfig, len(qs))
	for name, q := range qs {
		out[name] = QueueConfig{Notify: slices.Clone(q.Notify), NotifySecret: q.NotifySecret}
	}
	return out
}

// fileQueues is c's queues in the file's shape (nil when none).
func (c *Config) fileQueues() map[string]config.Queue {
	if c.Queues == nil {
		return nil
	}
	out := make(map[string]config.Queue, len(c.Queues))
	for name, q := range c.Queues {
		out[name] = config.Queue{Notify: slices.Clone(q.Notify), NotifySecret: q.NotifySecret}
	}
	return out
}

// backfillsOf is the file's scheduled backfills as Config holds them (nil
// when none); a setting left 0 is its default.
func backfillsOf(bs map[string]config.Backfill) map[string]Backfill {
	if bs == nil {
		return nil
	}
	out := make(map[string]Backfill, len(bs))
	for name, b := range bs {
		out[name] = Backfill{LogGroup: b.LogGroup, LogStream: b.LogStream, Every: b.Every(), Lookback: b.Lookback(),
			Region: b.Region, Endpoint: b.Endpoint}
	}
	return out
}

// fileBackfills is c's scheduled backfills in the file's shape (nil when
// none).
func (c *Config) fileBackfills(u *units) map[string]config.Backfill {
	if c.Ingest.Backfill == nil {
		return nil
	}
	out := make(map[string]config.Backfill, len(c.Ingest.Backfill))
	for name, b := range c.Ingest.Backfill {
		at := "ingest.backfill." + name
		out[name] = config.Backfill{LogGroup: b.LogGroup, LogStream: b.LogStream,
			EverySeconds: u.whole(at+".every_seconds", b.Every, time.Second), LookbackSeconds: u.whole(at+".lookback_seconds", b.Lookback, time.Second),
			Region: b.Region, Endpoint: b.Endpoint}
	}
	return out
}
