package outbox

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
)

// Record kinds. The numbers are on disk: never renumber.
const (
	kindEvent  byte = 1 // a JobEvent protobuf
	kindResult byte = 2 // the attempt's JobResult protobuf: always the last record
	kindLine   byte = 3 // one output line as read (see lines.go)
	kindBatch  byte = 4 // an OUTPUT_BATCH of lines written before (see lines.go)
	kindHeader byte = 5 // the outbox's Header as JSON: the first record of every segment
)

// maxRecord bounds one record, so a corrupt length cannot make a reader
// allocate without limit. A line or a batch is at most max_batch_bytes
// (≤ 8 MiB).
const maxRecord = 16 << 20

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// errTorn marks a record that was being written when the worker died: the
// file ends there.
var errTorn = errors.New("torn record")

// appendRecord frames one record: uvarint(len(payload)+1) | kind | payload |
// crc32c(kind|payload).
func appendRecord(dst []byte, kind byte, payload []byte) []byte {
	dst = binary.AppendUvarint(dst, uint64(len(payload)+1))
	start := len(dst)
	dst = append(dst, kind)
	dst = append(dst, payload...)
	return binary.LittleEndian.AppendUint32(dst, crc32.Checksum(dst[start:], castagnoli))
}

// parseRecord reads the record at the start of b. It returns io.EOF for an
// empty b; errShort, with the record's whole length in n, when b holds only
// its beginning (more of the file may hold the rest); errTorn for a corrupt
// record. The payload is a part of b.
func parseRecord(b []byte) (kind byte, payload []byte, n int, err error) {
	if len(b) == 0 {
		return 0, nil, 0, io.EOF
	}
	size, m, err := parseLength(b)
	if err != nil {
		return 0, nil, 0, err
	}
	n = m + int(size) + 4
	if len(b) < n {
		return 0, nil, n, errShort
	}
	body := b[m : m+int(size)]
	if crc32.Checksum(body, castagnoli) != binary.LittleEndian.Uint32(b[m+int(size):n]) {
		return 0, nil, 0, fmt.Errorf("%w: checksum mismatch", errTorn)
	}
	return body[0], body[1:], n, nil
}

// errShort: the bytes end inside a record.
var errShort = errors.New("record continues past the bytes read")

// parseLength reads a record's length prefix: a canonical uvarint (as
// binary.AppendUvarint writes it) between 1 and maxRecord, and the bytes it
// took. Bytes that end inside it are errShort, with n 0.
func parseLength(b []byte) (size uint64, n int, err error) {
	var shift uint
	for n < binary.MaxVarintLen64 {
		if n == len(b) {
			return 0, 0, errShort
		}
		c := b[n]
		n++
		size |= uint64(c&0x7f) << shift
		if c < 0x80 {
			if (c == 0 && n > 1) || size == 0 || size > maxRecord {
				return 0, 0, errTorn
			}
			return size, n, nil
		}
		shift += 7
	}
	return 0, 0, errTorn
}
