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
	formatZstdProto byte = 1 // the JobEvent protobuf, a zstd frame
	formatS2Proto   byte = 2 // the JobEvent protobuf, an S2 block
)

// Codec is how a store compresses the payloads it writes. Every payload
// says its own format, so a store reads both whichever it writes, and a
// store's codec can change at any time.
//
// S2 (the zero Codec) costs the least CPU: a quarter of zstd's time on a
// 50-line batch (zstd builds its tables again for every item). zstd makes
// payloads about half S2's size on output that does not repeat itself
// (hex, ids, paths), and S2 saves little there: where a store bills writes
// and reads by the kilobyte (DynamoDB), that halves the bill of a log.
type Codec uint8

const (
	S2   Codec = iota // S2 blocks: cheap to make
	Zstd              // zstd frames: about half S2's size on varied output
)

// codecNames are the names ParseCodec takes, in the order of the codecs.
var codecNames = []string{"s2", "zstd"}

// String is the codec's name in configuration.
func (c Codec) String() string {
	if int(c) < len(codecNames) {
		return codecNames[c]
	}
	return fmt.Sprintf("Codec(%d)", uint8(c))
}

// ParseCodec reads a codec's name as configuration gives it.
func ParseCodec(name string) (Codec, error) {
	for i, n := range codecNames {
		if n == name {
			return Codec(i), nil
		}
	}
	return 0, fmt.Errorf("unknown compression %q: use s2 or zstd", name)
}

// zenc compresses zstd payloads. EncodeAll may be called from any number
// of goroutines at once; one window of the largest payload (a batch of up
// to 8 MiB) is enough, as each payload is a frame of its own.
var zenc, _ = zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedDefault), zstd.WithEncoderConcurrency(1),
	zstd.WithZeroFrames(true), zstd.WithLowerEncoderMem(true))

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
// worker that read it, where CPU counts most; a store that bills by size
// recodes it (Codec.Recode).
func Encode(ev *spoolv1.JobEvent) ([]byte, error) { return S2.Encode(ev) }

// Encode is Encode with c.
func (c Codec) Encode(ev *spoolv1.JobEvent) ([]byte, error) {
	buf := bodies.Get().(*[]byte)
	defer putBody(buf)
	raw, err := proto.MarshalOptions{Deterministic: true}.MarshalAppend((*buf)[:0], ev)
	if err != nil {
		return nil, fmt.Errorf("encode event %d: %w", ev.GetSequence(), err)
	}
	*buf = raw[:0]
	return c.compress(raw), nil
}

// Recode returns a payload (as Encode writes it, with any codec) as c
// writes it: the payload itself when it already is, else its protobuf
// compressed again. The protobuf is not decoded. A payload that does not
// decompress is ErrCorrupt.
func (c Codec) Recode(payload []byte) ([]byte, error) {
	if len(payload) > 0 && payload[0] == c.format() {
		return payload, nil
	}
	buf := bodies.Get().(*[]byte)
	defer putBody(buf)
	raw, err := unwrapInto(payload, (*buf)[:0])
	if err != nil {
		return nil, err
	}
	if payload[0] != formatProto {
		*buf = raw[:0]
	} else if len(raw) < compressMin {
		return payload, nil // too small to compress, as c.compress would leave it
	}
	return c.compress(raw), nil
}

// format is the format byte of what c compresses.
func (c Codec) format() byte {
	if c == Zstd {
		return formatZstdProto
	}
	return formatS2Proto
}

// compress makes a payload of a JobEvent protobuf: compressed with c when
// that makes it smaller, copied as it is otherwise.
func (c Codec) compress(raw []byte) []byte {
	if len(raw) >= compressMin {
		var out []byte
		if c == Zstd {
			out = zenc.EncodeAll(raw, append(make([]byte, 0, 1+len(raw)/2), formatZstdProto))
		} else {
			out = make([]byte, 1+s2.MaxEncodedLen(len(raw)))
			out = out[:1+len(s2.Encode(out[1:], raw))]
			out[0] = formatS2Proto
		}
		if len(out)-1 < len(raw) {
			return out
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
