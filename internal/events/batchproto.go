package events

import (
	"time"

	"google.golang.org/protobuf/encoding/protowire"

	spoolv1 "github.com/spool-run/spool/gen/spool/v1"
)

// AppendProto appends the protobuf encoding of the batch's OUTPUT_BATCH
// event to dst: the bytes proto.Marshal writes for Event's message, written
// straight from the lines. A worker encodes every batch it sends; building
// a message of every line only to encode it was most of that cost.
func (b Batch) AppendProto(dst []byte) []byte {
	var first time.Time
	if len(b.Lines) > 0 {
		first = b.Lines[0].Time
	}
	dst = appendVarintField(dst, fieldSequence, uint64(b.Sequence))
	// A Timestamp is always set: its message, even when empty.
	sec, nanos := first.Unix(), int64(first.Nanosecond())
	tsLen := sizeVarintField(sec) + sizeVarintField(nanos)
	dst = protowire.AppendTag(dst, fieldTimestamp, protowire.BytesType)
	dst = protowire.AppendVarint(dst, uint64(tsLen))
	dst = appendVarintField(dst, fieldSecond, uint64(sec))
	dst = appendVarintField(dst, fieldNanos, uint64(nanos))
	dst = appendVarintField(dst, fieldEventType, uint64(spoolv1.EventType_EVENT_TYPE_OUTPUT_BATCH))
	dst = appendVarintField(dst, fieldAttempt, uint64(int64(b.Attempt)))

	n := int64(len(b.Lines))
	body := 0
	for _, l := range b.Lines {
		size := itemSize(l)
		body += protowire.SizeTag(fieldOutputs) + protowire.SizeBytes(size)
	}
	end := b.Sequence + n - 1
	body += sizeVarintField(b.Sequence) + sizeVarintField(end)
	times := 0
	if !b.Untimed {
		for _, l := range b.Lines {
			times += protowire.SizeVarint(uint64(l.Time.UnixMilli()))
		}
		if times > 0 {
			body += protowire.SizeTag(fieldTimestamps) + protowire.SizeBytes(times)
		}
	}
	body += sizeVarintField(int64(b.PlaybackIntervalMillis)) + sizeVarintField(b.FirstLine)

	dst = protowire.AppendTag(dst, fieldOutputBatch, protowire.BytesType)
	dst = protowire.AppendVarint(dst, uint64(body))
	for _, l := range b.Lines {
		dst = protowire.AppendTag(dst, fieldOutputs, protowire.BytesType)
		dst = protowire.AppendVarint(dst, uint64(itemSize(l)))
		if len(l.Data) > 0 {
			dst = protowire.AppendTag(dst, fieldItemBytes, protowire.BytesType)
			dst = protowire.AppendBytes(dst, l.Data)
		}
		dst = appendVarintField(dst, fieldItemStream, uint64(int64(l.Stream)))
		if l.Partial {
			dst = appendVarintField(dst, fieldItemPart, 1)
		}
	}
	dst = appendVarintField(dst, fieldStartSeq, uint64(b.Sequence))
	dst = appendVarintField(dst, fieldEndSeq, uint64(end))
	if times > 0 {
		dst = protowire.AppendTag(dst, fieldTimestamps, protowire.BytesType)
		dst = protowire.AppendVarint(dst, uint64(times))
		for _, l := range b.Lines {
			dst = protowire.AppendVarint(dst, uint64(l.Time.UnixMilli()))
		}
	}
	dst = appendVarintField(dst, fieldPlayback, uint64(int64(b.PlaybackIntervalMillis)))
	return appendVarintField(dst, fieldFirstLine, uint64(b.FirstLine))
}

// itemSize is the encoded size of a line's OutputItem.
func itemSize(l Line) int {
	n := sizeVarintField(int64(l.Stream))
	if len(l.Data) > 0 {
		n += protowire.SizeTag(fieldItemBytes) + protowire.SizeBytes(len(l.Data))
	}
	if l.Partial {
		n += protowire.SizeTag(fieldItemPart) + 1
	}
	return n
}

// appendVarintField appends a scalar field, left out when it is zero, as
// proto3 leaves out default values.
func appendVarintField(dst []byte, num protowire.Number, v uint64) []byte {
	if v == 0 {
		return dst
	}
	dst = protowire.AppendTag(dst, num, protowire.VarintType)
	return protowire.AppendVarint(dst, v)
}

// sizeVarintField is the size appendVarintField writes for v.
func sizeVarintField(v int64) int {
	if v == 0 {
		return 0
	}
	return protowire.SizeTag(1) + protowire.SizeVarint(uint64(v))
}

// EncodeBatch is Encode of the batch's event, without building it.
func EncodeBatch(b Batch) []byte {
	buf := bodies.Get().(*[]byte)
	defer putBody(buf)
	raw := b.AppendProto((*buf)[:0])
	*buf = raw[:0]
	return S2.compress(raw)
}
