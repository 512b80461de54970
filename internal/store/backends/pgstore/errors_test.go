package pgstore

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/spool-run/spool"
	"github.com/spool-run/spool/internal/store/backends/pgstore/pgtest"
)

// A database that cannot be reached is spool.ErrUnavailable (callers retry);
// a refusal of what was asked is not.
func TestUnreachableIsUnavailable(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want bool
	}{
		{&pgconn.PgError{Code: "57P01", Message: "terminating connection due to administrator command"}, true},
		{&pgconn.PgError{Code: "08006", Message: "connection failure"}, true},
		{&pgconn.PgError{Code: "53300", Message: "too many connections"}, true},
		{&net.OpError{Op: "dial", Net: "tcp", Err: errors.New("connection refused")}, true},
		// What the driver says when the connection drops under a call (a
		// restart of the database cuts every connection).
		{io.ErrUnexpectedEOF, true},
		{io.EOF, true},
		{fmt.Errorf("begin: %w", pgconn.ErrConnClosed), true},
		{&pgconn.PgError{Code: "23505", Message: "duplicate key"}, false},
		{&pgconn.PgError{Code: "42P01", Message: `relation "jobs" does not exist`}, false},
	} {
		err := pgErr(tc.err, "read job %s", "j1")
		if got := errors.Is(err, spool.ErrUnavailable); got != tc.want {
			t.Errorf("%v: unavailable %v, want %v (%v)", tc.err, got, tc.want, err)
		}
	}
}

// TestRestartIsUnavailable: calls in flight when PostgreSQL restarts as
// after a crash (pg_ctl restart -m immediate) fail as unavailable, not as
// internal errors, whatever the driver makes of the cut connection.
func TestRestartIsUnavailable(t *testing.T) {
	t.Parallel()
	cluster := pgtest.NewCluster(t)
	s, err := Open(context.Background(), Config{URL: cluster.URL(), MaxConns: 8, MinConns: 1}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	const calls = 4
	started := make(chan struct{}, calls)
	errs := make(chan error, calls)
	var wg sync.WaitGroup
	for range calls {
		wg.Go(func() {
			err := s.write(context.Background(), func(tx pgx.Tx, _ *notes) error {
				started <- struct{}{}
				_, err := tx.Exec(context.Background(), "SELECT pg_sleep(30)")
				return pgErr(err, "sleep")
			})
			errs <- err
		})
	}
	for range calls {
		<-started
	}
	cluster.Restart(t)
	wg.Wait()
	close(errs)
	for err := range errs {
		if !errors.Is(err, spool.ErrUnavailable) {
			t.Errorf("a call cut by the restart failed with %v, want unavailable", err)
		}
	}
}
