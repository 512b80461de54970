// Package events holds what every part of spool needs to know about a job's
// event log: how an event is encoded for storage, how a batch spans
// sequences and lines, and how batches are trimmed and unpacked for readers.
package events

import (
	"errors"
	"fmt"

	"github.com/klauspost/compress/zstd"
	"google.golang.org/protobuf/proto"

	spoolv1 "github.com/spool-run/spool/gen/spool/v1"
)

// Stored payloads start with a format byte so the encoding can change
// without a migration.
const (
	formatProto     byte = 0 // the JobEvent protobuf as is
	formatZstdProto byte = 1 // the JobEvent protobuf, zstd-compressed
)

// compressMin is the encoded size below which compression is not tried: a
// zstd frame's overhead eats the saving on small events.
const compressMin = 256

// MaxDecodedBytes bounds what a stored payload may expand to, so a corrupt
// or hostile item cannot make a reader allocate without limit.
const MaxDecodedBytes = 64 << 20

var (
	// One encoder per CPU: a worker encodes the batches of all its jobs
	// at once.
	zenc, _ = zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedDefault))
	zdec, _ = zstd.NewReader(nil, zstd.WithDecoderConcurrency(0), zstd.WithDecoderMaxMemory(MaxDecodedBytes))
)

// ErrCorrupt is returned for a stored payload that cannot be decoded.
var ErrCorrupt = errors.New("corrupt event payload")

// Encode serializes an event for storage, compressed with zstd when that
// makes it smaller. Log output compresses well (3-10x for typical build
// logs), which matters most where items are billed by size.
func Encode(ev *spoolv1.JobEvent) ([]byte, error) {
	raw, err := proto.MarshalOptions{Deterministic: true}.Marshal(ev)
	if err != nil {
		return nil, fmt.Errorf("encode event %d: %w", ev.GetSequence(), err)
	}
	if len(raw) >= compressMin {
		z := zenc.EncodeAll(raw, make([]byte, 1, len(raw)/2))
		z[0] = formatZstdProto
		if len(z) < len(raw)+1 {
			return z, nil
		}
	}
	out := make([]byte, 1+len(raw))
	out[0] = formatProto
	copy(out[1:], raw)
	return out, nil
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

// unwrapInto is unwrap decompressing into dst (appending to it) when the
// payload is compressed; otherwise it returns the payload's own bytes.
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
