package seal_test

import (
	"errors"
	"testing"

	"github.com/spool-run/spool/internal/seal"
)

// FuzzOpen: whatever a store hands back as a job's sealed secrets, Open
// answers without panicking: what Seal made for the job opens to its
// secrets, anything else is ErrOpen.
func FuzzOpen(f *testing.F) {
	s, err := seal.New([]byte(keyA))
	if err != nil {
		f.Fatal(err)
	}
	good, err := s.Seal("job-1", map[string]string{"A": "value"})
	if err != nil {
		f.Fatal(err)
	}
	f.Add(good)
	f.Add([]byte{1})
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, blob []byte) {
		// Only a blob Seal made (for this job, with this key) opens; the
		// fuzzer's own workers seal the seed anew, so it is known by what
		// it opens to.
		m, err := s.Open("job-1", blob)
		switch {
		case err == nil && blob != nil && (len(m) != 1 || m["A"] != "value"):
			t.Fatalf("Open(%x) = %v: what no seal made opened", blob, m)
		case err != nil && (!errors.Is(err, seal.ErrOpen) || m != nil):
			t.Fatalf("Open(%x) = %v, %v; want ErrOpen", blob, m, err)
		}
	})
}
