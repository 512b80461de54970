package outbox

import (
	"bufio"
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

// readRecord reads one record. It returns io.EOF at a clean end, errTorn for
// an incomplete or corrupt tail, and the bytes consumed.
func readRecord(r *bufio.Reader) (kind byte, payload []byte, n int, err error) {
	size, n, err := readLength(r)
	if err != nil {
		return 0, nil, 0, err
	}
	body := make([]byte, size+4)
	if _, err := io.ReadFull(r, body); err != nil {
		return 0, nil, 0, errTorn
	}
	n += len(body)
	sum := binary.LittleEndian.Uint32(body[size:])
	if crc32.Checksum(body[:size], castagnoli) != sum {
		return 0, nil, 0, fmt.Errorf("%w: checksum mismatch", errTorn)
	}
	return body[0], body[1:size], n, nil
}

// readLength reads a record's length prefix: a canonical uvarint (as
// binary.AppendUvarint writes it) between 1 and maxRecord, and the bytes it
// took.
func readLength(r *bufio.Reader) (size uint64, n int, err error) {
	var shift uint
	for n < binary.MaxVarintLen64 {
		b, err := r.ReadByte()
		if err == io.EOF && n == 0 {
			return 0, 0, io.EOF
		}
		if err != nil {
			return 0, 0, errTorn
		}
		n++
		size |= uint64(b&0x7f) << shift
		if b < 0x80 {
			if (b == 0 && n > 1) || size == 0 || size > maxRecord {
				return 0, 0, errTorn
			}
			return size, n, nil
		}
		shift += 7
	}
	return 0, 0, errTorn
}
