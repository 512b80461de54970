package sqlitestore

import "context"

// Ping implements store.Pinger: a read of the database file's header on a
// reader connection, which fails when the file cannot be read (a disk gone
// away, a file removed under the server). SQLite retries a busy database
// inside its own calls (the busy timeout), so this store reports no
// retries of its own.
func (s *Store) Ping(ctx context.Context) error {
	var version int64
	if err := s.r.QueryRowContext(ctx, "PRAGMA schema_version").Scan(&version); err != nil {
		return sqliteErr(err, "read the database")
	}
	return nil
}
