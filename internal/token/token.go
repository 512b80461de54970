// Package token signs and verifies the server's tokens with HMAC-SHA256, so
// any replica holding the key checks them without shared state:
//
//   - task tokens, what a worker shows to act on a job it leased: they name
//     the job, its queue, the attempt and the backend's lease handle, so a
//     worker cannot forge one for another job or attempt;
//   - session tokens, the web UI's login cookie: they name the API key the
//     person logged in with (by its hash), the session's own id (what a
//     sign-out records as ended) and when the login ends;
//   - WebSocket tickets: they name the key, the one job whose log they
//     open, their own id (what their one use spends) and when they expire;
//   - job tokens, what a job's own process shows to keep files beside its
//     job (artifacts): they name the job, the attempt they were given to
//     and when they expire.
//
// Format: a prefix naming the kind ("st2.", "ss1.", "tk1." or "jt1.") +
// base64url(claims) + "." + base64url(HMAC of the first two parts). The
// prefix is signed too, so one kind never passes for the other, and the
// signature is checked before the claims are parsed. Sessions and tickets
// hold JSON claims; task tokens, shown with every call a worker makes about
// its job, hold a compact binary form that takes a fraction of JSON's time
// to read ("st1." task tokens, with JSON claims, from servers before it,
// are still accepted).
package token

import (
	"bytes"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"math"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"unsafe"
)

// KeySize is the size of a generated signing key; shorter configured keys
// are refused.
const KeySize = 32

// MaxLen bounds a token: SQS receipt handles run to about 1 KB, so 4 KiB
// leaves room while refusing absurd input before any work.
const MaxLen = 4096

const (
	prefix        = "st2."
	jsonPrefix    = "st1." // task tokens with JSON claims
	sessionPrefix = "ss1."
	ticketPrefix  = "tk1."
	// JobTokenPrefix starts every job token: the server's door tells one
	// from an API key by it.
	JobTokenPrefix = "jt1."
)

var (
	// ErrMalformed: not a spool task token at all.
	ErrMalformed = errors.New("malformed task token")
	// ErrSignature: well formed, but not signed by this server's key
	// (forged, tampered with, or from a server with another key).
	ErrSignature = errors.New("task token signature does not match")
)

// Claims is what a token asserts.
type Claims struct {
	JobID   string `json:"j"`
	Queue   string `json:"q"`
	Attempt int32  `json:"a"`
	LeaseID string `json:"l"`
}

// Signer signs and verifies tokens with one key.
type Signer struct {
	key  []byte
	macs sync.Pool // of *macState: HMACs keyed with key, to Reset and reuse
}

// NewSigner returns a signer for key, which must be at least KeySize bytes.
func NewSigner(key []byte) (*Signer, error) {
	if len(key) < KeySize {
		return nil, fmt.Errorf("task token key is %d bytes; it must be at least %d", len(key), KeySize)
	}
	return &Signer{key: bytes.Clone(key)}, nil
}

// Sign returns the task token for c.
func (s *Signer) Sign(c Claims) string {
	var buf [128]byte
	b := buf[:0]
	for _, f := range []string{c.JobID, c.Queue} {
		b = binary.AppendUvarint(b, uint64(len(f)))
		b = append(b, f...)
	}
	b = binary.AppendUvarint(b, uint64(uint32(c.Attempt)))
	b = binary.AppendUvarint(b, uint64(len(c.LeaseID)))
	b = append(b, c.LeaseID...)
	return s.seal(prefix, b)
}

// Verify checks a task token's signature and returns its claims. Errors
// wrap ErrMalformed or ErrSignature.
func (s *Signer) Verify(tok string) (Claims, error) {
	var c Claims
	if strings.HasPrefix(tok, jsonPrefix) {
		if err := s.verify(jsonPrefix, tok, &c); err != nil {
			return Claims{}, err
		}
	} else {
		var buf [512]byte
		body, err := s.open(prefix, tok, buf[:0])
		if err != nil {
			return Claims{}, err
		}
		if c, err = decodeClaims(body); err != nil {
			return Claims{}, err
		}
	}
	if c.JobID == "" || c.Attempt < 1 || c.LeaseID == "" {
		return Claims{}, fmt.Errorf("%w: claims lack a job, attempt or lease", ErrMalformed)
	}
	return c, nil
}

// decodeClaims reads the claims Sign writes: the job id and the queue,
// each a length and its bytes, the attempt, and the lease handle likewise.
func decodeClaims(b []byte) (Claims, error) {
	var c Claims
	field := func() (string, bool) {
		n, k := binary.Uvarint(b)
		if k <= 0 || n > uint64(len(b)-k) {
			return "", false
		}
		f := string(b[k : k+int(n)])
		b = b[k+int(n):]
		return f, true
	}
	var ok bool
	if c.JobID, ok = field(); !ok {
		return Claims{}, fmt.Errorf("%w: claims: no job id", ErrMalformed)
	}
	if c.Queue, ok = field(); !ok {
		return Claims{}, fmt.Errorf("%w: claims: no queue", ErrMalformed)
	}
	a, k := binary.Uvarint(b)
	if k <= 0 || a > math.MaxInt32 {
		return Claims{}, fmt.Errorf("%w: claims: no attempt", ErrMalformed)
	}
	c.Attempt, b = int32(a), b[k:]
	if c.LeaseID, ok = field(); !ok {
		return Claims{}, fmt.Errorf("%w: claims: no lease", ErrMalformed)
	}
	if len(b) > 0 {
		return Claims{}, fmt.Errorf("%w: claims: %d bytes after the lease", ErrMalformed, len(b))
	}
	return c, nil
}

// Session is what a web UI login cookie asserts.
type Session struct {
	// KeyHash is the hash of the API key the person logged in with: the
	// server checks, at every request, that the key is still valid.
	KeyHash string `json:"k"`
	// ID names this login among all others, so that signing out can end
	// it on every server (the store records it as ended).
	ID string `json:"i"`
	// Expires is when the login ends, Unix seconds.
	Expires int64 `json:"e"`
}

// SignSession returns the session token for ss.
func (s *Signer) SignSession(ss Session) string { return s.sign(sessionPrefix, ss) }

// VerifySession checks a session token's signature and returns what it
// asserts (its expiry is the caller's to check). Errors wrap ErrMalformed
// or ErrSignature.
func (s *Signer) VerifySession(tok string) (Session, error) {
	var ss Session
	if err := s.verify(sessionPrefix, tok, &ss); err != nil {
		return Session{}, err
	}
	if ss.KeyHash == "" || ss.ID == "" || ss.Expires == 0 {
		return Session{}, fmt.Errorf("%w: session lacks a key, an id or an expiry", ErrMalformed)
	}
	return ss, nil
}

// Ticket is what a WebSocket ticket asserts: its holder may open the log
// stream of one job, once, with the key's rights to read, before Expires.
type Ticket struct {
	// KeyHash is the hash of the key the ticket was asked for with.
	KeyHash string `json:"k"`
	// JobID is the job whose log the ticket opens.
	JobID string `json:"j"`
	// ID names the ticket: its use spends it in the store.
	ID string `json:"i"`
	// Expires is when the ticket can no longer be used, Unix seconds.
	Expires int64 `json:"e"`
}

// SignTicket returns the ticket token for tk.
func (s *Signer) SignTicket(tk Ticket) string { return s.sign(ticketPrefix, tk) }

// VerifyTicket checks a ticket's signature and returns what it asserts (its
// expiry and its one use are the caller's to check). Errors wrap
// ErrMalformed or ErrSignature.
func (s *Signer) VerifyTicket(tok string) (Ticket, error) {
	var tk Ticket
	if err := s.verify(ticketPrefix, tok, &tk); err != nil {
		return Ticket{}, err
	}
	if tk.KeyHash == "" || tk.JobID == "" || tk.ID == "" || tk.Expires == 0 {
		return Ticket{}, fmt.Errorf("%w: ticket lacks a key, a job, an id or an expiry", ErrMalformed)
	}
	return tk, nil
}

// Job is what a job token asserts: its holder, the process of one attempt
// of one job, may keep files beside that job until Expires, while that
// attempt runs (the server checks the attempt against the store).
type Job struct {
	// JobID is the job whose files the token keeps.
	JobID string `json:"j"`
	// Attempt is the attempt the token was given to: once another attempt
	// runs, or the job ended, the token is refused.
	Attempt int32 `json:"a"`
	// Expires is when the token can no longer be used, Unix seconds.
	Expires int64 `json:"e"`
}

// SignJob returns the job token for j.
func (s *Signer) SignJob(j Job) string { return s.sign(JobTokenPrefix, j) }

// VerifyJob checks a job token's signature and returns what it asserts
// (its expiry and its attempt are the caller's to check). Errors wrap
// ErrMalformed or ErrSignature.
func (s *Signer) VerifyJob(tok string) (Job, error) {
	var j Job
	if err := s.verify(JobTokenPrefix, tok, &j); err != nil {
		return Job{}, err
	}
	if j.JobID == "" || j.Attempt < 1 || j.Expires == 0 {
		return Job{}, fmt.Errorf("%w: job token lacks a job, an attempt or an expiry", ErrMalformed)
	}
	return j, nil
}

func (s *Signer) sign(kind string, claims any) string {
	body, _ := json.Marshal(claims) // structs of strings and ints always marshal
	return s.seal(kind, body)
}

// seal returns the token of kind holding body.
//
// A lease signs a token for every job it hands out, so the token is
// written into one buffer of its final size, which becomes the string.
func (s *Signer) seal(kind string, body []byte) string {
	enc := base64.RawURLEncoding
	n := len(kind) + enc.EncodedLen(len(body))
	b := make([]byte, 0, n+1+enc.EncodedLen(sha256.Size))
	b = enc.AppendEncode(append(b, kind...), body)
	s.mac(b[:n], func(sum []byte) { b = enc.AppendEncode(append(b, '.'), sum) })
	// b is never written again: the string may share its bytes.
	return unsafe.String(unsafe.SliceData(b), len(b))
}

// verify checks a token of kind and decodes its JSON claims into v. Claims
// are only read once the signature shows this server's key made them, so
// fields a newer server added (during a rolling upgrade) are ignored
// rather than refused.
func (s *Signer) verify(kind, tok string, v any) error {
	var buf [512]byte
	body, err := s.open(kind, tok, buf[:0])
	if err != nil {
		return err
	}
	if err := json.Unmarshal(body, v); err != nil {
		return fmt.Errorf("%w: claims: %v", ErrMalformed, err)
	}
	return nil
}

// open checks a token of kind and appends its claims, decoded, to b. A
// worker shows a task token with every call about its job, so this runs
// for every completion and publish: the signature goes to a buffer on the
// stack and the MAC comes from a pool.
func (s *Signer) open(kind, tok string, b []byte) ([]byte, error) {
	if len(tok) > MaxLen {
		return nil, fmt.Errorf("%w: %d bytes is longer than %d", ErrMalformed, len(tok), MaxLen)
	}
	if !strings.HasPrefix(tok, kind) {
		return nil, fmt.Errorf("%w: does not start with %q", ErrMalformed, kind)
	}
	dot := strings.LastIndexByte(tok, '.')
	if dot < len(kind) {
		return nil, fmt.Errorf("%w: no signature", ErrMalformed)
	}
	payload, sig64 := tok[:dot], tok[dot+1:]
	var sig [sha256.Size]byte
	if base64.RawURLEncoding.DecodedLen(len(sig64)) != len(sig) {
		return nil, fmt.Errorf("%w: the signature is not %d bytes", ErrMalformed, len(sig))
	}
	if _, err := base64.RawURLEncoding.Decode(sig[:], []byte(sig64)); err != nil {
		return nil, fmt.Errorf("%w: signature is not base64url", ErrMalformed)
	}
	var signed bool
	s.mac(readOnly(payload), func(sum []byte) { signed = hmac.Equal(sig[:], sum) })
	if !signed {
		return nil, ErrSignature
	}
	b, err := base64.RawURLEncoding.AppendDecode(b, readOnly(payload[len(kind):]))
	if err != nil {
		return nil, fmt.Errorf("%w: claims are not base64url", ErrMalformed)
	}
	return b, nil
}

// readOnly is s's bytes as a slice, for functions that only read them
// (the MAC, base64 decoding): a token is read without a copy of it.
func readOnly(s string) []byte { return unsafe.Slice(unsafe.StringData(s), len(s)) }

// mac hands use the MAC of payload, in a buffer use must not keep: the
// MAC and its buffer are pooled, so signing and verifying allocate nothing
// for it.
func (s *Signer) mac(payload []byte, use func(sum []byte)) {
	m, _ := s.macs.Get().(*macState)
	if m == nil {
		m = &macState{h: hmac.New(sha256.New, s.key)}
	}
	m.h.Reset()
	_, _ = m.h.Write(payload)
	use(m.h.Sum(m.out[:0]))
	s.macs.Put(m)
}

// macState is a pooled MAC and the buffer its sums go to.
type macState struct {
	h   hash.Hash
	out [sha256.Size]byte
}

// LoadOrCreateKey reads the key in path, or creates it with KeySize random
// bytes (mode 0600) when the file does not exist. Several servers sharing a
// backend must share the key: configure it instead of generating it.
func LoadOrCreateKey(path string) ([]byte, error) {
	key, err := os.ReadFile(path)
	if err == nil {
		if len(key) < KeySize {
			return nil, fmt.Errorf("task token key %s is %d bytes; it must be at least %d (delete it to generate a new one)", path, len(key), KeySize)
		}
		return key, nil
	}
	if !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("read task token key: %w", err)
	}
	key = make([]byte, KeySize)
	if _, err := rand.Read(key); err != nil {
		return nil, fmt.Errorf("generate task token key: %w", err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("create directory for task token key: %w", err)
	}
	// Write a temporary file and link it into place: the key appears whole or
	// not at all, and if another process made one meanwhile, we use theirs.
	tmp, err := os.CreateTemp(filepath.Dir(path), ".token-key-*")
	if err != nil {
		return nil, fmt.Errorf("create task token key: %w", err)
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(key); err != nil {
		tmp.Close()
		return nil, fmt.Errorf("write task token key: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return nil, fmt.Errorf("write task token key: %w", err)
	}
	if err := os.Link(tmp.Name(), path); errors.Is(err, os.ErrExist) {
		return LoadOrCreateKey(path)
	} else if err != nil {
		return nil, fmt.Errorf("install task token key: %w", err)
	}
	return key, nil
}
