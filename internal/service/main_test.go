package service_test

import (
	"testing"

	"go.uber.org/goleak"

	"github.com/spool-run/spool/internal/store/backends/awsstore/awstest"
)

// TestMain runs the tests beside the package's shared AWS test servers,
// and fails the package when a test leaves a goroutine running.
func TestMain(m *testing.M) { goleak.VerifyTestMain(awstest.Runner(m)) }
