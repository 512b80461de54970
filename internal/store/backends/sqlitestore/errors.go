package sqlitestore

import (
	"context"
	"errors"
	"fmt"

	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/spool-run/spool"
	"github.com/spool-run/spool/internal/apierr"
)

// sqliteErr explains a failed database call: what the store was doing,
// then SQLite's error. A database another connection keeps locked past
// the busy timeout (another program writing the file, a backup holding
// it) is spool.ErrUnavailable: the caller is told to retry, and the core
// counts it as the store being away, as it does for the other stores'
// outages. Any other failure keeps its own kind, if it has one.
func sqliteErr(err error, format string, args ...any) error {
	what := fmt.Sprintf(format, args...)
	if locked(err) && !errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded) {
		return apierr.Errorf(spool.ErrUnavailable, "sqlite: %s: the database is locked by another connection (another program using the file?); retry: %w", what, err)
	}
	return fmt.Errorf("sqlite: %s: %w", what, err)
}

// locked reports whether err is SQLite's SQLITE_BUSY or SQLITE_LOCKED, or
// one of their extended codes: the database, or a table in it, is held by
// another connection.
func locked(err error) bool {
	var se *sqlite.Error
	if !errors.As(err, &se) {
		return false
	}
	switch se.Code() & 0xff {
	case sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED:
		return true
	}
	return false
}
