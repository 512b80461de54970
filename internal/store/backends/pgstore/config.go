package pgstore

import (
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Config is the PostgreSQL store's configuration, embedded in the server's
// configuration under store.postgres. Only URL needs setting.
type Config struct {
	// URL is the database, as a postgres:// URL or a libpq key=value string
	// (postgres://spool:secret@db.internal:5432/spool?sslmode=verify-full).
	URL string `yaml:"url"`
	// MaxConns is the most connections the server opens to the database
	// (default 16), besides the one it listens for changes on. Several
	// servers share the database's max_connections (100 by default).
	MaxConns int32 `yaml:"max_conns"`
	// MinConns are kept open while idle (default 2).
	MinConns int32 `yaml:"min_conns"`
	// MaxConnLifetime closes a connection this old once it is idle, so a
	// pool moves to a new database address after a failover (default 1h).
	MaxConnLifetime time.Duration `yaml:"max_conn_lifetime"`
	// MaxConnIdleTime closes a connection idle this long (default 10m).
	MaxConnIdleTime time.Duration `yaml:"max_conn_idle_time"`
	// ConnectTimeout bounds each attempt to connect (default 10s).
	ConnectTimeout time.Duration `yaml:"connect_timeout"`
}

// Defaults for the fields left zero.
const (
	DefaultMaxConns        = 16
	DefaultMinConns        = 2
	DefaultMaxConnLifetime = time.Hour
	DefaultMaxConnIdleTime = 10 * time.Minute
	DefaultConnectTimeout  = 10 * time.Second
)

// ErrNoURL is returned when the store is chosen without a database URL.
var ErrNoURL = errors.New("store.postgres.url is not set: give the database as postgres://USER:PASSWORD@HOST:5432/DB (or set SPOOL_STORE_POSTGRES_URL)")

// Validate checks the configuration without connecting. Its errors name
// the setting and never repeat the URL, which may hold a password.
func (c Config) Validate() error {
	_, err := c.poolConfig()
	return err
}

// poolConfig is the pgxpool configuration c describes.
func (c Config) poolConfig() (*pgxpool.Config, error) {
	if c.URL == "" {
		return nil, ErrNoURL
	}
	pc, err := pgxpool.ParseConfig(c.URL)
	if err != nil {
		// pgx's message quotes what it could not parse, password and all;
		// say what is wrong without it.
		return nil, fmt.Errorf("store.postgres.url is not a PostgreSQL URL (want postgres://USER:PASSWORD@HOST:5432/DB or key=value pairs): %s", redact(err))
	}
	for _, s := range []struct {
		name string
		v    int64
	}{
		{"max_conns", int64(c.MaxConns)}, {"min_conns", int64(c.MinConns)},
		{"max_conn_lifetime", int64(c.MaxConnLifetime)}, {"max_conn_idle_time", int64(c.MaxConnIdleTime)},
		{"connect_timeout", int64(c.ConnectTimeout)},
	} {
		if s.v < 0 {
			return nil, fmt.Errorf("store.postgres.%s must not be negative", s.name)
		}
	}
	pc.MaxConns = or(c.MaxConns, DefaultMaxConns)
	pc.MinConns = or(c.MinConns, DefaultMinConns)
	if pc.MinConns > pc.MaxConns {
		return nil, fmt.Errorf("store.postgres.min_conns (%d) is more than max_conns (%d)", pc.MinConns, pc.MaxConns)
	}
	pc.MaxConnLifetime = or(c.MaxConnLifetime, DefaultMaxConnLifetime)
	pc.MaxConnIdleTime = or(c.MaxConnIdleTime, DefaultMaxConnIdleTime)
	pc.ConnConfig.ConnectTimeout = or(c.ConnectTimeout, DefaultConnectTimeout)
	if pc.ConnConfig.RuntimeParams == nil {
		pc.ConnConfig.RuntimeParams = map[string]string{}
	}
	if _, ok := pc.ConnConfig.RuntimeParams["application_name"]; !ok {
		pc.ConnConfig.RuntimeParams["application_name"] = "spool"
	}
	return pc, nil
}

func or[T comparable](v, def T) T {
	var zero T
	if v == zero {
		return def
	}
	return v
}

// redact is a parse error's reason without the URL it quotes: the reason a
// URL would not parse, or what pgx said with the password masked.
func redact(err error) string {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err.Error()
	}
	var pe *pgconn.ParseConfigError
	if errors.As(err, &pe) {
		return strings.ReplaceAll(pe.Error(), pe.ConnString, "…")
	}
	return "check its form"
}
