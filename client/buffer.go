package client

import (
	"cmp"
	"slices"

	spoolv1 "github.com/spool-run/spool/gen/spool/v1"
	"github.com/spool-run/spool/internal/events"
)

// EventBuffer holds a job's events one per output line, in sequence order,
// with a read position that can be moved back: for consumers of the
// low-level Batches iterator that want to replay part of what they have
// read (a viewer scrolling back, a retry of a handler) without asking the
// server again.
//
//	buf := client.NewEventBuffer(75)
//	for batch, err := range c.Events(ctx, id, client.StreamOptions{FromSequence: 75}).Batches() {
//		if err != nil {
//			return err
//		}
//		buf.AddBatch(batch)
//		for ev, ok := buf.Next(); ok; ev, ok = buf.Next() {
//			show(ev)
//		}
//	}
//	buf.Rewind(100) // Next yields sequence 100 and what follows again
//
// It keeps every event added (Trim drops the ones no longer needed). It is
// not safe for concurrent use.
type EventBuffer struct {
	events []*spoolv1.JobEvent
	pos    int   // index of the event Next returns
	min    int64 // events below this sequence are not kept
}

// NewEventBuffer returns an empty buffer that keeps events from sequence
// minSequence on (0 or 1: all of them).
func NewEventBuffer(minSequence int64) *EventBuffer {
	return &EventBuffer{min: minSequence}
}

// AddBatch adds an event as Batches yields it: an OUTPUT_BATCH is unpacked
// into one OUTPUT_DATA event per line, any other event is added as it is.
// Events below the buffer's minimum sequence, and events at or below the
// last one already buffered (a batch seen twice), are left out, so the
// buffer stays in strict sequence order.
func (b *EventBuffer) AddBatch(ev *spoolv1.JobEvent) {
	last := b.min - 1
	if n := len(b.events); n > 0 {
		last = max(last, b.events[n-1].GetSequence())
	}
	if events.EndSequence(ev) <= last {
		return
	}
	b.events = append(b.events, events.Unpack(events.TrimBefore(ev, last+1))...)
}

// Next returns the event at the read position and moves past it; false
// when every buffered event has been read.
func (b *EventBuffer) Next() (*spoolv1.JobEvent, bool) {
	if b.pos >= len(b.events) {
		return nil, false
	}
	ev := b.events[b.pos]
	b.pos++
	return ev, true
}

// Rewind moves the read position to the first buffered event at or after
// sequence toSequence: Next yields it and everything after it again. A
// sequence below the buffer's first event rewinds to the start; one past
// its last leaves nothing to read until more is added.
func (b *EventBuffer) Rewind(toSequence int64) {
	b.pos = b.index(toSequence)
}

// Len is the number of buffered events Next has not returned yet.
func (b *EventBuffer) Len() int { return len(b.events) - b.pos }

// Trim drops the buffered events below sequence beforeSequence, which can
// no longer be rewound to, so a long-running consumer's memory stays
// bounded. The read position stays on the same event (or the first one
// kept, if it was dropped).
func (b *EventBuffer) Trim(beforeSequence int64) {
	i := b.index(beforeSequence)
	b.events = slices.Delete(b.events, 0, i)
	b.pos = max(0, b.pos-i)
	b.min = max(b.min, beforeSequence)
}

// index is the position of the first event at or after seq.
func (b *EventBuffer) index(seq int64) int {
	i, _ := slices.BinarySearchFunc(b.events, seq, func(e *spoolv1.JobEvent, s int64) int {
		return cmp.Compare(e.GetSequence(), s)
	})
	return i
}
