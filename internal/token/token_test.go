package token

import (
	"bytes"
	"encoding/base64"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

func signer(t testing.TB, key string) *Signer {
	t.Helper()
	s, err := NewSigner([]byte(key))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

const keyA = "0123456789abcdef0123456789abcdef"

func TestRoundTrip(t *testing.T) {
	s := signer(t, keyA)
	c := Claims{JobID: "j1", Queue: "default", Attempt: 2, LeaseID: "AQEB+receipt/handle=="}
	got, err := s.Verify(s.Sign(c))
	if err != nil || got != c {
		t.Fatalf("Verify(Sign(c)) = %+v, %v", got, err)
	}
}

func TestRefusesForgedAndTampered(t *testing.T) {
	s := signer(t, keyA)
	tok := s.Sign(Claims{JobID: "j1", Queue: "q", Attempt: 1, LeaseID: "l"})
	other := signer(t, strings.Repeat("x", 32)).Sign(Claims{JobID: "j1", Queue: "q", Attempt: 1, LeaseID: "l"})

	// Re-sign nothing, but claim attempt 2 with the old signature.
	parts := strings.Split(tok, ".")
	forgedBody := base64.RawURLEncoding.EncodeToString([]byte(`{"j":"j1","q":"q","a":2,"l":"l"}`))
	raised := parts[0] + "." + forgedBody + "." + parts[2]

	flipped := []byte(tok)
	flipped[len(flipped)-3] ^= 1

	for name, bad := range map[string]string{
		"other key": other, "raised attempt": raised, "flipped bit": string(flipped),
	} {
		if _, err := s.Verify(bad); !errors.Is(err, ErrSignature) && !errors.Is(err, ErrMalformed) {
			t.Fatalf("%s: err %v, want a refusal", name, err)
		}
	}
	for name, bad := range map[string]string{
		"empty": "", "garbage": "hello", "no signature": "st1.abc", "bad base64": "st1.@@@.###",
		"too long": "st1." + strings.Repeat("a", MaxLen),
	} {
		if _, err := s.Verify(bad); !errors.Is(err, ErrMalformed) {
			t.Fatalf("%s: err %v, want ErrMalformed", name, err)
		}
	}
}

func TestSignedButIncompleteClaims(t *testing.T) {
	s := signer(t, keyA)
	for _, c := range []Claims{{Queue: "q", Attempt: 1, LeaseID: "l"}, {JobID: "j", LeaseID: "l"}, {JobID: "j", Attempt: 1}} {
		if _, err := s.Verify(s.Sign(c)); !errors.Is(err, ErrMalformed) {
			t.Fatalf("claims %+v: err %v, want ErrMalformed", c, err)
		}
	}
}

// TestJSONTaskTokensStillVerify: a worker that leased from a server before
// task tokens went binary finishes its job on one after.
func TestJSONTaskTokensStillVerify(t *testing.T) {
	s := signer(t, keyA)
	c := Claims{JobID: "j1", Queue: "default", Attempt: 3, LeaseID: "l"}
	old := s.sign(jsonPrefix, c)
	if !strings.HasPrefix(old, "st1.") || strings.HasPrefix(s.Sign(c), "st1.") {
		t.Fatalf("old token %q, new token %q: want st1. only on the old", old, s.Sign(c))
	}
	if got, err := s.Verify(old); err != nil || got != c {
		t.Fatalf("Verify(old token) = %+v, %v", got, err)
	}
}

// TestSignedButBrokenBinaryClaims: claims this key signed that Sign would
// never write (cut short, with bytes left over, an attempt past int32) are
// malformed, not read as far as they go.
func TestSignedButBrokenBinaryClaims(t *testing.T) {
	s := signer(t, keyA)
	good := []byte{1, 'j', 1, 'q', 1, 1, 'l'}
	for name, body := range map[string][]byte{
		"empty":          {},
		"cut in the id":  {5, 'j'},
		"no attempt":     {1, 'j', 1, 'q'},
		"cut lease":      {1, 'j', 1, 'q', 1, 4, 'l'},
		"bytes left":     append(append([]byte{}, good...), 0),
		"huge attempt":   {1, 'j', 1, 'q', 0xff, 0xff, 0xff, 0xff, 0x0f, 1, 'l'},
		"huge length":    {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01},
		"overlong field": {0x80},
	} {
		if _, err := s.Verify(s.seal(prefix, body)); !errors.Is(err, ErrMalformed) {
			t.Errorf("%s: err %v, want ErrMalformed", name, err)
		}
	}
	if c, err := s.Verify(s.seal(prefix, good)); err != nil || c != (Claims{JobID: "j", Queue: "q", Attempt: 1, LeaseID: "l"}) {
		t.Fatalf("the well-formed body: %+v, %v", c, err)
	}
}

func TestShortKeyRefused(t *testing.T) {
	if _, err := NewSigner([]byte("short")); err == nil {
		t.Fatal("a 5-byte key was accepted")
	}
}

func TestLoadOrCreateKey(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sub", "token.key")
	var (
		wg   sync.WaitGroup
		keys = make([][]byte, 8)
	)
	for i := range keys {
		wg.Go(func() {
			k, err := LoadOrCreateKey(path)
			if err != nil {
				t.Error(err)
			}
			keys[i] = k
		})
	}
	wg.Wait()
	for _, k := range keys[1:] {
		if !bytes.Equal(k, keys[0]) || len(k) != KeySize {
			t.Fatal("concurrent creators got different keys")
		}
	}
	fi, err := os.Stat(path)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("key file mode %v err %v, want 0600", fi.Mode(), err)
	}
	if err := os.WriteFile(path, []byte("short"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadOrCreateKey(path); err == nil || !strings.Contains(err.Error(), "delete it") {
		t.Fatalf("a truncated key file: err %v", err)
	}
}

// TestTokenKindsDoNotMix: a task token, a session and a ticket are each
// refused as either of the others, though one key signs all three.
func TestTokenKindsDoNotMix(t *testing.T) {
	s, err := NewSigner([]byte(keyA))
	if err != nil {
		t.Fatal(err)
	}
	task := s.Sign(Claims{JobID: "j", Queue: "q", Attempt: 1, LeaseID: "l"})
	session := Session{KeyHash: "h", ID: "s1", Expires: 42}
	sess := s.SignSession(session)
	ticket := Ticket{KeyHash: "h", JobID: "j", ID: "t1", Expires: 42}
	tick := s.SignTicket(ticket)
	if _, err := s.VerifySession(task); !errors.Is(err, ErrMalformed) {
		t.Fatalf("a task token passed as a session: %v", err)
	}
	if _, err := s.Verify(sess); !errors.Is(err, ErrMalformed) {
		t.Fatalf("a session passed as a task token: %v", err)
	}
	if _, err := s.VerifySession(tick); !errors.Is(err, ErrMalformed) {
		t.Fatalf("a ticket passed as a session: %v", err)
	}
	if _, err := s.VerifyTicket(sess); !errors.Is(err, ErrMalformed) {
		t.Fatalf("a session passed as a ticket: %v", err)
	}
	// Re-prefixing does not help: the prefix is signed.
	if _, err := s.VerifySession("ss1." + strings.TrimPrefix(task, "st1.")); !errors.Is(err, ErrSignature) && !errors.Is(err, ErrMalformed) {
		t.Fatalf("a re-prefixed task token passed as a session: %v", err)
	}
	if _, err := s.VerifySession("ss1." + strings.TrimPrefix(tick, "tk1.")); !errors.Is(err, ErrSignature) {
		t.Fatalf("a re-prefixed ticket passed as a session: %v", err)
	}
	if got, err := s.VerifySession(sess); err != nil || got != session {
		t.Fatalf("session round trip: %+v %v", got, err)
	}
	if got, err := s.VerifyTicket(tick); err != nil || got != ticket {
		t.Fatalf("ticket round trip: %+v %v", got, err)
	}
	job := Job{JobID: "j", Attempt: 2, Expires: 42}
	jt := s.SignJob(job)
	if got, err := s.VerifyJob(jt); err != nil || got != job {
		t.Fatalf("job token round trip: %+v %v", got, err)
	}
	for name, other := range map[string]string{"task token": task, "session": sess, "ticket": tick} {
		if _, err := s.VerifyJob(other); !errors.Is(err, ErrMalformed) {
			t.Fatalf("a %s passed as a job token: %v", name, err)
		}
	}
	if _, err := s.VerifyTicket(jt); !errors.Is(err, ErrMalformed) {
		t.Fatalf("a job token passed as a ticket: %v", err)
	}
	if _, err := s.VerifyJob("jt1." + strings.TrimPrefix(tick, "tk1.")); !errors.Is(err, ErrSignature) {
		t.Fatalf("a re-prefixed ticket passed as a job token: %v", err)
	}
	// A session made before sessions had ids cannot be signed out of
	// everywhere: it is refused.
	if _, err := s.VerifySession(s.SignSession(Session{KeyHash: "h", Expires: 42})); !errors.Is(err, ErrMalformed) {
		t.Fatalf("a session without an id: %v", err)
	}
}

// A lease signs a token for each job and every call about a job verifies
// one: signing makes the token's string and nothing else, verifying makes
// the claims' strings and a buffer for them, and neither copies the token
// to compute its MAC. (Written with a string per piece, Sign made 8
// objects and Verify 6.)
func TestSignAndVerifyAllocations(t *testing.T) {
	s := signer(t, "0123456789abcdef0123456789abcdef")
	c := Claims{JobID: "01JOB0000000000000000000000", Queue: "builds", Attempt: 2, LeaseID: "lease-0000000000000000"}
	if n := testing.AllocsPerRun(100, func() { s.Sign(c) }); n > 1+raceObjects {
		t.Errorf("Sign made %.0f objects, want %d", n, 1+raceObjects)
	}
	tok := s.Sign(c)
	if n := testing.AllocsPerRun(100, func() {
		if _, err := s.Verify(tok); err != nil {
			t.Fatal(err)
		}
	}); n > 4+raceObjects {
		t.Errorf("Verify made %.0f objects, want at most %d", n, 4+raceObjects)
	}
}
