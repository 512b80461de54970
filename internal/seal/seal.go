// Package seal encrypts a job's secrets for the store: AES-256-GCM under a
// key derived (HKDF-SHA256) from the server's token key, with a random
// nonce per job and the job's id as additional data, so a copy of the
// database reveals no secret and a sealed blob moved to another job's
// record does not open there.
//
// Every server sharing a store shares the token key (server.token_key), so
// any of them opens what another sealed.
package seal

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/hkdf"
	"crypto/rand"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
)

// version starts every blob: the layout (and key derivation) it was sealed
// with, so another can come later beside it.
const version = 1

// info names what the derived key is for: a key derived for anything else
// from the same token key is unrelated to it.
const info = "spool job secrets v1"

// MinKeySize is the shortest token key a sealer is derived from.
const MinKeySize = 32

// ErrOpen is wrapped by Open's errors: the blob was not sealed for this job
// with this key (another server's token key, tampering, another job's
// blob), or is not a blob at all.
var ErrOpen = errors.New("the job's secrets cannot be decrypted")

// Sealer seals and opens job secrets with one derived key.
type Sealer struct {
	aead cipher.AEAD
}

// New derives the sealer of a server's token key.
func New(tokenKey []byte) (*Sealer, error) {
	if len(tokenKey) < MinKeySize {
		return nil, fmt.Errorf("token key is %d bytes; sealing secrets needs at least %d", len(tokenKey), MinKeySize)
	}
	key, err := hkdf.Key(sha256.New, tokenKey, nil, info, 32)
	if err != nil {
		return nil, err
	}
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, err
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return nil, err
	}
	return &Sealer{aead: aead}, nil
}

// Seal encrypts a job's secrets (name to value) for the job with id
// jobID. No secrets seal to nil.
func (s *Sealer) Seal(jobID string, secrets map[string]string) ([]byte, error) {
	if len(secrets) == 0 {
		return nil, nil
	}
	plain, err := json.Marshal(secrets) // keys sorted: the same secrets give the same text
	if err != nil {
		return nil, fmt.Errorf("encode secrets: %w", err)
	}
	// The text of the secrets lives no longer than it is needed.
	defer clear(plain)
	n := s.aead.NonceSize()
	out := make([]byte, 1+n, 1+n+len(plain)+s.aead.Overhead())
	out[0] = version
	if _, err := rand.Read(out[1:]); err != nil {
		return nil, err
	}
	return s.aead.Seal(out, out[1:], plain, additional(jobID)), nil
}

// Open decrypts what Seal made for the job with id jobID. A nil blob opens
// to no secrets.
func (s *Sealer) Open(jobID string, blob []byte) (map[string]string, error) {
	if blob == nil {
		return nil, nil
	}
	n := s.aead.NonceSize()
	if len(blob) < 1+n+s.aead.Overhead() || blob[0] != version {
		return nil, fmt.Errorf("%w: not a sealed blob of this version", ErrOpen)
	}
	plain, err := s.aead.Open(nil, blob[1:1+n], blob[1+n:], additional(jobID))
	if err != nil {
		return nil, fmt.Errorf("%w: it was sealed with another key (has server.token_key changed?) or for another job", ErrOpen)
	}
	defer clear(plain)
	var out map[string]string
	if err := json.Unmarshal(plain, &out); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrOpen, err)
	}
	return out, nil
}

// additional is the additional data a job's blob is sealed with: the job's
// id, after the version, so a blob opens only in its own job's record.
func additional(jobID string) []byte {
	return append([]byte{version}, jobID...)
}
