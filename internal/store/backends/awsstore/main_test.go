package awsstore_test

import (
	"context"
	"testing"

	"go.uber.org/goleak"

	"github.com/spool-run/spool/internal/store/backends/awsstore"
	"github.com/spool-run/spool/internal/store/backends/awsstore/awstest"
)

// TestMain runs the tests beside the shared AWS test servers, and fails
// the package when a test leaves a goroutine running.
func TestMain(m *testing.M) { goleak.VerifyTestMain(awstest.Runner(m)) }

// openStore opens a store on cfg, closed when t ends.
func openStore(t testing.TB, cfg awsstore.Config) *awsstore.Store {
	t.Helper()
	s, err := awsstore.Open(context.Background(), cfg)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// freshStore opens a store on new tables.
func freshStore(t testing.TB) *awsstore.Store {
	t.Helper()
	return openStore(t, awstest.Shared(t).NewConfig(t))
}
