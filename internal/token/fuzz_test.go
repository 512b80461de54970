package token

import (
	"errors"
	"testing"
)

// FuzzVerify: the decoder never panics, refuses with one of its two errors,
// and accepts only what this key signed (checked by re-signing the claims).
func FuzzVerify(f *testing.F) {
	s, _ := NewSigner([]byte(keyA))
	f.Add(s.Sign(Claims{JobID: "j", Queue: "q", Attempt: 1, LeaseID: "l"}))
	f.Add("st1.e30.AAAA")
	f.Add("st1..")
	f.Add("")
	f.Fuzz(func(t *testing.T, tok string) {
		c, err := s.Verify(tok)
		if err != nil {
			if !errors.Is(err, ErrMalformed) && !errors.Is(err, ErrSignature) {
				t.Fatalf("unexpected error kind: %v", err)
			}
			return
		}
		if c.JobID == "" || c.Attempt < 1 || c.LeaseID == "" {
			t.Fatalf("accepted incomplete claims %+v", c)
		}
		again, err := s.Verify(s.Sign(c))
		if err != nil || again != c {
			t.Fatalf("accepted claims do not round-trip: %+v %v", again, err)
		}
	})
}
