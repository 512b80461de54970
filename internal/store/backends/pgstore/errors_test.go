package pgstore

import (
	"errors"
	"net"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/spool-run/spool"
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
		{&pgconn.PgError{Code: "23505", Message: "duplicate key"}, false},
		{&pgconn.PgError{Code: "42P01", Message: `relation "jobs" does not exist`}, false},
	} {
		err := pgErr(tc.err, "read job %s", "j1")
		if got := errors.Is(err, spool.ErrUnavailable); got != tc.want {
			t.Errorf("%v: unavailable %v, want %v (%v)", tc.err, got, tc.want, err)
		}
	}
}
