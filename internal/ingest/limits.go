package ingest

import (
	"bytes"
	"fmt"
	"io"
	"math"
)

// The limits a zero field of Limits stands for.
const (
	DefaultMaxBodyBytes    = 16 << 20
	DefaultMaxDecodedBytes = 64 << 20
	DefaultMaxEvents       = 100_000
	DefaultMaxMessageBytes = 1 << 20
	// A CloudWatch source is "<logGroup>:<logStream>", and each of those
	// may be 512 characters long.
	DefaultMaxSourceBytes = 1025
	DefaultMaxIDBytes     = 256
)

// Limits bound what one request may hold, so that a sender, broken or
// hostile, cannot make a decoder take more memory or time than the caller
// meant to give it. A field that is 0 (or negative) takes its default.
// Input over a limit is refused with an error that wraps ErrTooLarge and
// says which limit it is and its value.
type Limits struct {
	MaxBodyBytes int64 // the request body, as sent (0: 16 MiB)
	// MaxDecodedBytes bounds what a Firehose request's records decode to,
	// all records together: their data with its base64 undone, and that
	// gzip data decompressed (0: 64 MiB). A gzip bomb is refused.
	MaxDecodedBytes int64
	MaxEvents       int // events in one request (0: 100,000)
	MaxMessageBytes int // one event's message, without its trailing newline (0: 1 MiB)
	MaxSourceBytes  int // a source name (0: 1025, a CloudWatch log group and stream of 512 each)
	MaxIDBytes      int // an event id (0: 256)

	// BodySetting and DecodedSetting name MaxBodyBytes and MaxDecodedBytes
	// in errors as the caller's configuration calls them, so that the
	// sender's operator knows what to change ("": "the limit").
	BodySetting, DecodedSetting string
}

func (l Limits) withDefaults() Limits {
	l.MaxBodyBytes = orDefault(l.MaxBodyBytes, DefaultMaxBodyBytes)
	l.MaxDecodedBytes = orDefault(l.MaxDecodedBytes, DefaultMaxDecodedBytes)
	l.MaxEvents = orDefault(l.MaxEvents, DefaultMaxEvents)
	l.MaxMessageBytes = orDefault(l.MaxMessageBytes, DefaultMaxMessageBytes)
	l.MaxSourceBytes = orDefault(l.MaxSourceBytes, DefaultMaxSourceBytes)
	l.MaxIDBytes = orDefault(l.MaxIDBytes, DefaultMaxIDBytes)
	return l
}

// orDefault is v, or def when v is 0 or negative (no limit set).
func orDefault[T int | int64](v, def T) T {
	if v <= 0 {
		return def
	}
	return v
}

// readAtMost reads r to its end, or to one byte past max: that byte tells
// a reader exactly at the limit from one over it, and nothing further is
// read (nor held in memory), whatever the size of what r could give.
// over says that r had more than max bytes, and then data is nil.
//
// What is read goes into pieces, each up to twice as large as the one
// before, joined once at the end: a slice grown as it fills would be
// copied at every step and, when the limit is reached, held twice over
// for nothing.
func readAtMost(r io.Reader, max int64) (data []byte, over bool, err error) {
	want := max
	if want < math.MaxInt64 {
		want++
	}
	var (
		pieces [][]byte
		total  int64
		size   int64 = firstPiece
	)
	for total < want {
		piece := make([]byte, min(size, want-total))
		n, err := io.ReadFull(r, piece)
		total += int64(n)
		if n > 0 {
			pieces = append(pieces, piece[:n])
		}
		if err == io.EOF || err == io.ErrUnexpectedEOF {
			break
		}
		if err != nil {
			return nil, false, err
		}
		size = min(2*size, lastPiece)
	}
	switch {
	case total > max:
		return nil, true, nil
	case len(pieces) == 1:
		return pieces[0], false, nil
	}
	return bytes.Join(pieces, nil), false, nil
}

// The pieces readAtMost reads into: small for the many small bodies, and
// no larger than a MiB, which bounds what the last piece may leave unused.
const (
	firstPiece = 16 << 10
	lastPiece  = 1 << 20
)

// readBody reads a request body within limits.MaxBodyBytes. An error of
// the reader is returned wrapped as it is, neither ErrMalformed nor
// ErrTooLarge: the input was not seen whole, and the caller knows better
// what a failed read means (a client gone, a deadline, its own
// http.MaxBytesReader).
func readBody(r io.Reader, limits Limits) ([]byte, error) {
	data, over, err := readAtMost(r, limits.MaxBodyBytes)
	if err != nil {
		return nil, fmt.Errorf("reading the body: %w", err)
	}
	if over {
		return nil, tooLarge("the body is over %d bytes (%s)", limits.MaxBodyBytes, named(limits.BodySetting))
	}
	return data, nil
}

// named is how an error names a limit: by its setting, or as "the limit".
func named(setting string) string {
	if setting == "" {
		return "the limit"
	}
	return setting
}
