package seal_test

import (
	"bytes"
	"errors"
	"maps"
	"testing"

	"github.com/spool-run/spool/internal/seal"
)

func sealer(t *testing.T, key string) *seal.Sealer {
	t.Helper()
	s, err := seal.New([]byte(key))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

const (
	keyA = "0123456789abcdef0123456789abcdef"
	keyB = "fedcba9876543210fedcba9876543210"
)

// TestSealOpens: what is sealed for a job opens for that job, under the
// same key, to the same secrets; the blob holds none of their bytes, and
// two seals of the same secrets differ (a nonce of their own).
func TestSealOpens(t *testing.T) {
	s := sealer(t, keyA)
	secrets := map[string]string{"DEPLOY_TOKEN": "hunter2-hunter2", "MULTI": "line one\nline two"}
	blob, err := s.Seal("job-1", secrets)
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range secrets {
		if bytes.Contains(blob, []byte(v)) {
			t.Fatalf("sealed blob holds the value %q", v)
		}
	}
	got, err := s.Open("job-1", blob)
	if err != nil || !maps.Equal(got, secrets) {
		t.Fatalf("Open = %v, %v; want %v", got, err, secrets)
	}
	again, _ := s.Seal("job-1", secrets)
	if bytes.Equal(blob, again) {
		t.Fatal("two seals of the same secrets are equal: the nonce is not random")
	}
	// A sealer made from the same key (another server sharing
	// server.token_key) opens it too.
	if got, err := sealer(t, keyA).Open("job-1", blob); err != nil || !maps.Equal(got, secrets) {
		t.Fatalf("Open by another sealer of the same key = %v, %v", got, err)
	}
	if b, err := s.Seal("job-1", nil); b != nil || err != nil {
		t.Fatalf("Seal of no secrets = %v, %v; want nil", b, err)
	}
	if m, err := s.Open("job-1", nil); m != nil || err != nil {
		t.Fatalf("Open of nil = %v, %v; want nil", m, err)
	}
}

// TestOpenRefuses: a blob opens only for its own job, under its own key,
// unchanged.
func TestOpenRefuses(t *testing.T) {
	s := sealer(t, keyA)
	blob, err := s.Seal("job-1", map[string]string{"A": "value"})
	if err != nil {
		t.Fatal(err)
	}
	tampered := bytes.Clone(blob)
	tampered[len(tampered)-1] ^= 1
	for name, open := range map[string]func() (map[string]string, error){
		"another job":   func() (map[string]string, error) { return s.Open("job-2", blob) },
		"another key":   func() (map[string]string, error) { return sealer(t, keyB).Open("job-1", blob) },
		"tampered":      func() (map[string]string, error) { return s.Open("job-1", tampered) },
		"truncated":     func() (map[string]string, error) { return s.Open("job-1", blob[:10]) },
		"other version": func() (map[string]string, error) { return s.Open("job-1", append([]byte{9}, blob[1:]...)) },
	} {
		if m, err := open(); !errors.Is(err, seal.ErrOpen) || m != nil {
			t.Errorf("%s: Open = %v, %v; want ErrOpen", name, m, err)
		}
	}
	if _, err := seal.New([]byte("short")); err == nil {
		t.Error("New accepted a 5-byte key")
	}
}
