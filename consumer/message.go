package consumer

import (
	"context"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// Message is one Kafka record.
type Message struct {
	Topic     string
	Partition int32
	Offset    int64
	Key       []byte
	Value     []byte
	Headers   []Header
	Timestamp time.Time
}

// Header is one record header.
type Header struct {
	Key   string
	Value []byte
}

// Handler handles one batch of one partition, in offset order.
//
// It returns commit=true when the batch is done: its offsets are then
// committed. commit=false, an error or a panic all mean "not done": nothing
// is committed and the same batch is delivered again after a pause, while
// the partition's later messages wait behind it. ctx ends when the
// partition is lost to another consumer or the consumer is stopped at once;
// the handler should then return promptly (its answer is ignored).
//
// The handler may keep the batch and the messages' byte slices, but must
// not change the bytes: a redelivery hands over the same ones.
type Handler func(ctx context.Context, batch []Message) (commit bool, err error)

// waiting is a message buffered for its partition's worker, with what the
// commit and the batch timeout need to know about it.
type waiting struct {
	msg     Message
	epoch   int32     // leader epoch of the record, kept in the commit
	arrived time.Time // when it was handed to the partition's buffer
}

func fromRecord(r *kgo.Record, now time.Time) waiting {
	m := Message{
		Topic:     r.Topic,
		Partition: r.Partition,
		Offset:    r.Offset,
		Key:       r.Key,
		Value:     r.Value,
		Timestamp: r.Timestamp,
	}
	if len(r.Headers) > 0 {
		m.Headers = make([]Header, len(r.Headers))
		for i, h := range r.Headers {
			m.Headers[i] = Header{Key: h.Key, Value: h.Value}
		}
	}
	return waiting{msg: m, epoch: r.LeaderEpoch, arrived: now}
}
