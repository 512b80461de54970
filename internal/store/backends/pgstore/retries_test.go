package pgstore

import (
	"errors"
	"slices"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"
)

// retriesHeard records what the store reports to its RetryObserver.
type retriesHeard []string

func (h *retriesHeard) Retried(op, reason string) { *h = append(*h, op+" "+reason) }
func (h *retriesHeard) Throttled(op string)       { *h = append(*h, "throttled "+op) }

// TestCommitReportsRetries: a write that lost a serialization race or a
// deadlock runs again, and each run again is reported with why; a failure
// of another kind is returned at once, unreported.
func TestCommitReportsRetries(t *testing.T) {
	var heard retriesHeard
	s := &Store{}
	s.ReportRetries(&heard)
	fails := []error{
		&pgconn.PgError{Code: "40001", Message: "could not serialize access due to concurrent update"},
		&pgconn.PgError{Code: "40P01", Message: "deadlock detected"},
		&pgconn.PgError{Code: "23505", Message: "duplicate key value violates unique constraint"},
	}
	runs := 0
	err := s.commit(func(*notes) error {
		runs++
		return fails[runs-1]
	})
	if !errors.Is(err, fails[2]) || runs != 3 {
		t.Fatalf("commit returned %v after %d runs; want the third run's error", err, runs)
	}
	if want := []string{"transaction serialization", "transaction deadlock"}; !slices.Equal(heard, want) {
		t.Errorf("reported %q, want %q", heard, want)
	}
}
