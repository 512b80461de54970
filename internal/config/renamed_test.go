package config

import (
	"slices"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

const leaseRenamed = "jobs.visibility_timeout_seconds is deprecated: call it jobs.lease_seconds"

// The lease's old key is still read, and says at start what to call it.
func TestOldLeaseKeyInFile(t *testing.T) {
	c, err := Parse([]byte("jobs:\n  visibility_timeout_seconds: 90\n"), env())
	if err != nil {
		t.Fatal(err)
	}
	if c.Jobs.LeaseSeconds != 90 || c.Jobs.OldLeaseSeconds != nil {
		t.Fatalf("lease_seconds %d, old key left %v; want 90, nil", c.Jobs.LeaseSeconds, c.Jobs.OldLeaseSeconds)
	}
	if !slices.Equal(c.Warnings, []string{leaseRenamed}) {
		t.Fatalf("warnings %q, want %q", c.Warnings, leaseRenamed)
	}
	// What the server keeps knows the new key only.
	out, err := yaml.Marshal(c)
	if err != nil || strings.Contains(string(out), "visibility_timeout") || !strings.Contains(string(out), "lease_seconds: 90") {
		t.Fatalf("marshalled %v:\n%s", err, out)
	}
}

func TestNewLeaseKeyWarnsNothing(t *testing.T) {
	c, err := Parse([]byte("jobs:\n  lease_seconds: 90\n"), env("SPOOL_JOBS_MAX_ATTEMPTS", "4"))
	if err != nil {
		t.Fatal(err)
	}
	if c.Jobs.LeaseSeconds != 90 || len(c.Warnings) != 0 {
		t.Fatalf("lease_seconds %d, warnings %q", c.Jobs.LeaseSeconds, c.Warnings)
	}
}

// Both names in one place is refused: either could be the value meant.
func TestBothLeaseKeys(t *testing.T) {
	for _, c := range []struct {
		name, yaml string
		env        []string
		want       string
	}{
		{"file", "jobs:\n  lease_seconds: 90\n  visibility_timeout_seconds: 60\n", nil,
			"jobs.visibility_timeout_seconds and jobs.lease_seconds are both set: jobs.visibility_timeout_seconds is the old name of jobs.lease_seconds; keep jobs.lease_seconds only"},
		{"file, the new one left at its default", "jobs:\n  visibility_timeout_seconds: 60\n  lease_seconds: 120\n", nil,
			"jobs.visibility_timeout_seconds and jobs.lease_seconds are both set"},
		{"environment", "", []string{"SPOOL_JOBS_LEASE_SECONDS", "90", "SPOOL_JOBS_VISIBILITY_TIMEOUT_SECONDS", "60"},
			"SPOOL_JOBS_VISIBILITY_TIMEOUT_SECONDS and SPOOL_JOBS_LEASE_SECONDS are both set: SPOOL_JOBS_VISIBILITY_TIMEOUT_SECONDS is the old name of SPOOL_JOBS_LEASE_SECONDS; keep SPOOL_JOBS_LEASE_SECONDS only"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := Parse([]byte(c.yaml), env(c.env...))
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %v, want %q", err, c.want)
			}
		})
	}
}

// The old variable works as the new one does: over the file, whatever
// name the file uses.
func TestOldLeaseVariable(t *testing.T) {
	c, err := Parse([]byte("jobs:\n  lease_seconds: 90\n"), env("SPOOL_JOBS_VISIBILITY_TIMEOUT_SECONDS", "75"))
	if err != nil {
		t.Fatal(err)
	}
	want := "SPOOL_JOBS_VISIBILITY_TIMEOUT_SECONDS is deprecated: call it SPOOL_JOBS_LEASE_SECONDS"
	if c.Jobs.LeaseSeconds != 75 || !slices.Equal(c.Warnings, []string{want}) {
		t.Fatalf("lease_seconds %d, warnings %q; want 75, %q", c.Jobs.LeaseSeconds, c.Warnings, want)
	}
	c, err = Parse([]byte("jobs:\n  visibility_timeout_seconds: 90\n"), env("SPOOL_JOBS_LEASE_SECONDS", "75"))
	if err != nil || c.Jobs.LeaseSeconds != 75 || !slices.Equal(c.Warnings, []string{leaseRenamed}) {
		t.Fatalf("%v: lease_seconds %d, warnings %q", err, c.Jobs.LeaseSeconds, c.Warnings)
	}
	_, err = Parse(nil, env("SPOOL_JOBS_VISIBILITY_TIMEOUT_SECONDS", "soon"))
	if err == nil || err.Error() != `SPOOL_JOBS_VISIBILITY_TIMEOUT_SECONDS="soon": not a whole number` {
		t.Fatalf("error %v", err)
	}

	// It is a setting's variable, not a misspelt one; but the help lists
	// the new name only.
	if w := UnknownEnv([]string{"SPOOL_JOBS_VISIBILITY_TIMEOUT_SECONDS=75"}); len(w) != 0 {
		t.Fatalf("UnknownEnv: %q", w)
	}
	names := EnvNames()
	if !slices.Contains(names, "SPOOL_JOBS_LEASE_SECONDS") || slices.Contains(names, "SPOOL_JOBS_VISIBILITY_TIMEOUT_SECONDS") {
		t.Fatalf("EnvNames: %v", names)
	}
}

// A value of the wrong kind under the old name is named by that name.
func TestOldLeaseKeyWrongType(t *testing.T) {
	_, err := Parse([]byte("jobs:\n  visibility_timeout_seconds: long\n"), env())
	want := `jobs.visibility_timeout_seconds: want a whole number, got "long" (line 2)`
	if err == nil || err.Error() != want {
		t.Fatalf("error %v, want %q", err, want)
	}
}
