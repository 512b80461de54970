package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestOldSettingNameWarns: spool server still reads the lease under its
// old key and variable, and says at start what to call it instead.
func TestOldSettingNameWarns(t *testing.T) {
	path := filepath.Join(t.TempDir(), "spool.yaml")
	if err := os.WriteFile(path, []byte("jobs:\n  visibility_timeout_seconds: 90\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	// A data directory that is a file stops the server right after it
	// has said what it had to.
	r := runLocal("server", "--config", path, "--addr", "127.0.0.1:0", "--data-dir", aFile(t))
	if !strings.Contains(r.stderr, `level=WARN msg="jobs.visibility_timeout_seconds is deprecated: call it jobs.lease_seconds"`) {
		t.Errorf("old key in the file: stderr %q", r.stderr)
	}

	t.Setenv("SPOOL_JOBS_VISIBILITY_TIMEOUT_SECONDS", "90")
	r = runLocal("server", "--addr", "127.0.0.1:0", "--data-dir", aFile(t))
	if !strings.Contains(r.stderr, `level=WARN msg="SPOOL_JOBS_VISIBILITY_TIMEOUT_SECONDS is deprecated: call it SPOOL_JOBS_LEASE_SECONDS"`) ||
		strings.Contains(r.stderr, "is not a spool setting") {
		t.Errorf("old variable: stderr %q", r.stderr)
	}
}
