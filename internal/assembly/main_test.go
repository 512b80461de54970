package assembly_test

import (
	"os"
	"testing"

	"github.com/spool-run/spool/internal/mototest"
)

// TestMain stops the moto_server the S3 tests start, if they ran.
func TestMain(m *testing.M) { os.Exit(mototest.Main(m)) }
