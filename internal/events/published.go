package events

import (
	"sync"

	spoolv1 "github.com/spool-run/spool/gen/spool/v1"
)

// Published is an event on its way into a job's log, with its summary:
// published as a message, or encoded as stores keep it (Encode's payload).
//
// Workers publish their output encoded, with the attempt and the line
// numbers the store would write into it already in place. Such an event is
// stored as it came: the server reads its summary to check it and never
// decodes its lines or encodes them again, which was most of what storing
// output cost it.
type Published struct {
	Summary
	msg     *spoolv1.JobEvent // nil until decoded, for an encoded event
	payload []byte            // the encoded event; nil for a message
}

// PublishedOf is a message on its way into a log.
func PublishedOf(ev *spoolv1.JobEvent) Published {
	return Published{Summary: SummaryOf(ev), msg: ev}
}

// Messages is PublishedOf of each of evs.
func Messages(evs ...*spoolv1.JobEvent) []Published {
	out := make([]Published, len(evs))
	for i, ev := range evs {
		out[i] = PublishedOf(ev)
	}
	return out
}

// ParseEncoded reads an encoded event (what Encode returns) as far as its
// summary. An output event in the shape Encode writes is not decoded any
// further; anything else is decoded in full. A payload that does not
// decode is ErrCorrupt.
func ParseEncoded(payload []byte) (Published, error) {
	buf := bodies.Get().(*[]byte)
	defer putBody(buf)
	body, err := unwrapInto(payload, (*buf)[:0])
	if err != nil {
		return Published{}, err
	}
	if payload[0] != formatProto {
		// Decompressed into the buffer, perhaps grown: keep it. An
		// uncompressed payload's body is the payload itself, which the
		// event goes on holding and no one else may write into.
		*buf = body[:0]
	}
	if s, err := inspect(body); err == nil {
		return Published{Summary: s, payload: payload}, nil
	}
	ev, err := unmarshal(body)
	if err != nil {
		return Published{}, err
	}
	s := SummaryOf(ev)
	s.Size = len(body) // what a reader of the payload decodes
	return Published{Summary: s, msg: ev, payload: payload}, nil
}

// Message returns the event as a message, decoding an encoded one.
func (p Published) Message() (*spoolv1.JobEvent, error) {
	if p.msg != nil {
		return p.msg, nil
	}
	return Decode(p.payload)
}

// Payload is the encoded event, or nil for a message.
func (p Published) Payload() []byte { return p.payload }

// bodies are buffers to decompress payloads into while their summaries are
// read; the summary keeps nothing of them.
var bodies = sync.Pool{New: func() any { return new([]byte) }}

// maxPooledBody keeps a rare large event's buffer out of the pool.
const maxPooledBody = 1 << 20

func putBody(b *[]byte) {
	if cap(*b) <= maxPooledBody {
		bodies.Put(b)
	}
}
