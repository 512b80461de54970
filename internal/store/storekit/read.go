package storekit

import (
	"context"
	"iter"

	spoolv1 "github.com/spool-run/spool/gen/spool/v1"
	"github.com/spool-run/spool/internal/events"
	"github.com/spool-run/spool/internal/store"
)

// StoredReader is the part of a store that reads a log: all Read needs.
type StoredReader interface {
	ReadStored(ctx context.Context, r store.ReadRequest) iter.Seq2[*events.Stored, error]
}

// Read yields the items of a job's log as messages, from where r says
// (store.JobStore.ReadStored has the rules), each item decoded whole: for
// a reader that looks inside every event. A reader that passes most items
// on as they are reads them stored.
func Read(ctx context.Context, s StoredReader, r store.ReadRequest) iter.Seq2[*spoolv1.JobEvent, error] {
	return Decoded(s.ReadStored(ctx, r))
}

// Decoded yields the events of stored items as messages.
func Decoded(items iter.Seq2[*events.Stored, error]) iter.Seq2[*spoolv1.JobEvent, error] {
	return func(yield func(*spoolv1.JobEvent, error) bool) {
		for st, err := range items {
			var ev *spoolv1.JobEvent
			if err == nil {
				ev, err = st.Event()
			}
			if !yield(ev, err) || err != nil {
				return
			}
		}
	}
}
