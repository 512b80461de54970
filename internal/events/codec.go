// Package events holds what every part of spool needs to know about a job's
// event log: how an event is encoded for storage, how a batch spans
// sequences and lines, and how batches are trimmed and unpacked for readers.
package events

import (
	"errors"
	"fmt"
	"slices"

	"github.com/klauspost/compress/s2"
	"github.com/klauspost/compress/zstd"
	"google.golang.org/protobuf/proto"

	spoolv1 "github.com/spool-run/spool/gen/spool/v1"
)

// Stored payloads start with a format byte so the encoding can change
// without a migration.
const (
	formatProto     byte = 0 // the JobEvent protobuf as is
	formatZstdProto byte = 1 // the JobEvent protobuf, zstd-compressed (written until S2 replaced it; still read)
	formatS2Proto   byte = 2 // the JobEvent protobuf, an S2 block
)

// compressMin is the encoded size below which compression is not tried: on
// small events the saving is a few bytes.
const compressMin = 256

// MaxDecodedBytes bounds what a stored payload may expand to, so a corrupt
// or hostile item cannot make a reader allocate without limit.
const MaxDecodedBytes = 64 << 20

var zdec, _ = zstd.NewReader(nil, zstd.WithDecoderConcurrency(0), zstd.WithDecoderMaxMemory(MaxDecodedBytes))

// ErrCorrupt is returned for a stored payload that cannot be decoded.
var ErrCorrupt = errors.New("corrupt event payload")

// Encode serializes an event for storage, compressed with S2 when that
// makes it smaller. Log output compresses well (about 5x for a typical
// build log), which matters most where items are billed by size.
//
// S2 rather than zstd: every batch of output is encoded once, by the
// worker that read it, and on small items such as a 50-line batch S2
// takes a quarter of zstd's time (zstd builds its tables again for every
// item) for about three quarters of its saving.
func Encode(ev *spoolv1.JobEvent) ([]byte, error) {
	buf := bodies.Get().(*[]byte)
	defer putBody(buf)
	raw, err := proto.MarshalOptions{Deterministic: true}.MarshalAppend((*buf)[:0], ev)
	if err != nil {
		return nil, fmt.Errorf("encode event %d: %w", ev.GetSequence(), err)
	}
	*buf = raw[:0]
	return compress(raw), nil
}

// compress makes a payload of a JobEvent protobuf: compressed with S2 when
// that makes it smaller, copied as it is otherwise.
func compress(raw []byte) []byte {
	if len(raw) >= compressMin {
		out := make([]byte, 1+s2.MaxEncodedLen(len(raw)))
		z := s2.Encode(out[1:], raw)
		if len(z) < len(raw) {
			out[0] = formatS2Proto
			return out[:1+len(z)]
		}
	}
	out := make([]byte, 1+len(raw))
	out[0] = formatProto
	copy(out[1:], raw)
	return out
}

// Decode parses a payload written by Encode.
func Decode(b []byte) (*spoolv1.JobEvent, error) {
	body, err := unwrap(b)
	if err != nil {
		return nil, err
	}
	return unmarshal(body)
}

// unwrap returns the JobEvent protobuf a payload holds, decompressed.
func unwrap(b []byte) ([]byte, error) {
	return unwrapInto(b, nil)
}

// unwrapInto is unwrap decompressing into dst's space (dst is empty) when
// the payload is compressed; otherwise it returns the payload's own bytes.
func unwrapInto(b, dst []byte) ([]byte, error) {
	if len(b) == 0 {
		return nil, fmt.Errorf("%w: empty", ErrCorrupt)
	}
	body := b[1:]
	switch b[0] {
	case formatProto:
	case formatZstdProto:
		var err error
		body, err = zdec.DecodeAll(body, dst)
		if err != nil {
			return nil, fmt.Errorf("%w: %v", ErrCorrupt, err)
		}
	case formatS2Proto:
		n, err := s2.DecodedLen(body)
		switch {
		case err != nil:
			return nil, fmt.Errorf("%w: %v", ErrCorrupt, err)
		case n > MaxDecodedBytes:
			return nil, fmt.Errorf("%w: expands to %d bytes, more than %d", ErrCorrupt, n, MaxDecodedBytes)
		}
		if body, err = s2.Decode(slices.Grow(dst[:0], n)[:n], body); err != nil {
			return nil, fmt.Errorf("%w: %v", ErrCorrupt, err)
		}
	default:
		return nil, fmt.Errorf("%w: unknown format %d", ErrCorrupt, b[0])
	}
	return body, nil
}

// unmarshal decodes a JobEvent protobuf.
func unmarshal(body []byte) (*spoolv1.JobEvent, error) {
	ev := &spoolv1.JobEvent{}
	if err := proto.Unmarshal(body, ev); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrCorrupt, err)
	}
	return ev, nil
}
