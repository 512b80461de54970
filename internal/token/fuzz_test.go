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
	f.Add(s.sign(jsonPrefix, Claims{JobID: "j", Queue: "q", Attempt: 1, LeaseID: "l"}))
	f.Add(s.seal(prefix, []byte{1, 'j', 1, 'q', 1, 5, 'l'}))
	f.Add("st2.AQ.AAAA")
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

// FuzzVerifySession: the same for session tokens; a task token is never
// taken for a session.
func FuzzVerifySession(f *testing.F) {
	s, _ := NewSigner([]byte(keyA))
	f.Add(s.SignSession(Session{KeyHash: "abc", ID: "i", Expires: 1}))
	f.Add(s.Sign(Claims{JobID: "j", Queue: "q", Attempt: 1, LeaseID: "l"}))
	f.Add("ss1.e30.AAAA")
	f.Fuzz(func(t *testing.T, tok string) {
		ss, err := s.VerifySession(tok)
		if err != nil {
			if !errors.Is(err, ErrMalformed) && !errors.Is(err, ErrSignature) {
				t.Fatalf("unexpected error kind: %v", err)
			}
			return
		}
		if ss.KeyHash == "" || ss.ID == "" || ss.Expires == 0 {
			t.Fatalf("accepted an incomplete session %+v", ss)
		}
		if again, err := s.VerifySession(s.SignSession(ss)); err != nil || again != ss {
			t.Fatalf("accepted session does not round-trip: %+v %v", again, err)
		}
	})
}

// FuzzVerifyTicket: the same for tickets; neither a session nor a task
// token is taken for one.
func FuzzVerifyTicket(f *testing.F) {
	s, _ := NewSigner([]byte(keyA))
	f.Add(s.SignTicket(Ticket{KeyHash: "abc", JobID: "j", ID: "i", Expires: 1}))
	f.Add(s.SignSession(Session{KeyHash: "abc", ID: "i", Expires: 1}))
	f.Add(s.Sign(Claims{JobID: "j", Queue: "q", Attempt: 1, LeaseID: "l"}))
	f.Add("tk1.e30.AAAA")
	f.Fuzz(func(t *testing.T, tok string) {
		tk, err := s.VerifyTicket(tok)
		if err != nil {
			if !errors.Is(err, ErrMalformed) && !errors.Is(err, ErrSignature) {
				t.Fatalf("unexpected error kind: %v", err)
			}
			return
		}
		if tk.KeyHash == "" || tk.JobID == "" || tk.ID == "" || tk.Expires == 0 {
			t.Fatalf("accepted an incomplete ticket %+v", tk)
		}
		if again, err := s.VerifyTicket(s.SignTicket(tk)); err != nil || again != tk {
			t.Fatalf("accepted ticket does not round-trip: %+v %v", again, err)
		}
	})
}

// FuzzVerifyJob: the same for job tokens; no other kind is taken for one.
func FuzzVerifyJob(f *testing.F) {
	s, _ := NewSigner([]byte(keyA))
	f.Add(s.SignJob(Job{JobID: "j", Attempt: 1, Expires: 1}))
	f.Add(s.SignTicket(Ticket{KeyHash: "abc", JobID: "j", ID: "i", Expires: 1}))
	f.Add(s.Sign(Claims{JobID: "j", Queue: "q", Attempt: 1, LeaseID: "l"}))
	f.Add(s.sign(JobTokenPrefix, map[string]any{"j": "j", "a": -1, "e": 1}))
	f.Add("jt1.e30.AAAA")
	f.Fuzz(func(t *testing.T, tok string) {
		j, err := s.VerifyJob(tok)
		if err != nil {
			if !errors.Is(err, ErrMalformed) && !errors.Is(err, ErrSignature) {
				t.Fatalf("unexpected error kind: %v", err)
			}
			return
		}
		if j.JobID == "" || j.Attempt < 1 || j.Expires == 0 {
			t.Fatalf("accepted an incomplete job token %+v", j)
		}
		if again, err := s.VerifyJob(s.SignJob(j)); err != nil || again != j {
			t.Fatalf("accepted job token does not round-trip: %+v %v", again, err)
		}
	})
}
