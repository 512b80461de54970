package blob

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"hash"
	"io"
)

// Digest counts and hashes the bytes written to it: backends pass what they
// store through one, so a blob's size and checksum come from the bytes
// themselves, in the same pass that stores them.
type Digest struct {
	h hash.Hash
	n int64
}

// NewDigest returns an empty digest.
func NewDigest() *Digest { return &Digest{h: sha256.New()} }

func (d *Digest) Write(p []byte) (int, error) {
	d.n += int64(len(p))
	return d.h.Write(p)
}

// Size is how many bytes were written.
func (d *Digest) Size() int64 { return d.n }

// Sum is the hex SHA-256 of what was written.
func (d *Digest) Sum() string { return hex.EncodeToString(d.h.Sum(nil)) }

// Reader is r, also written to d and stopped once ctx ends: a Put reads
// its input through it, so a cancelled Put stops at its next read.
func (d *Digest) Reader(ctx context.Context, r io.Reader) io.Reader {
	return &digestReader{ctx: ctx, r: io.TeeReader(r, d)}
}

type digestReader struct {
	ctx context.Context
	r   io.Reader
}

func (r *digestReader) Read(p []byte) (int, error) {
	if err := r.ctx.Err(); err != nil {
		return 0, err
	}
	return r.r.Read(p)
}

// Clip turns a requested range into the part of a blob of size bytes that
// it covers: start and count, with count 0 when it covers nothing.
func Clip(size, offset, length int64) (start, count int64, err error) {
	if offset < 0 {
		return 0, 0, fmt.Errorf("%w: offset %d is negative", ErrInvalidRange, offset)
	}
	if offset >= size {
		return size, 0, nil
	}
	count = size - offset
	if length >= 0 && length < count {
		count = length
	}
	return offset, count, nil
}

// Empty is a reader of nothing, for a range that covers nothing.
func Empty() io.ReadCloser { return io.NopCloser(eofReader{}) }

type eofReader struct{}

func (eofReader) Read([]byte) (int, error) { return 0, io.EOF }
