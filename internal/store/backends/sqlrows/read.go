package sqlrows

import (
	"github.com/spool-run/spool/internal/events"
	"github.com/spool-run/spool/internal/store"
	"github.com/spool-run/spool/internal/store/storekit"
)

// ReadPage is how many items a read fetches per query. Pages are read whole
// and then yielded, so a slow reader holds no connection (and, in SQLite, no
// read transaction that would stop the WAL from being checkpointed).
const ReadPage = 128

// ReadPages yields r's items from sequence from (where the store's seek put
// the read), fetching up to ReadPage at a time with fetch, each page after
// the last sequence of the one before, until a short page or r.Limit.
func ReadPages(r store.ReadRequest, from int64, fetch func(from int64, n int) ([]*events.Stored, error), yield func(*events.Stored, error) bool) {
	yielded := 0
	for {
		page := ReadPage
		if r.Limit > 0 {
			page = min(page, r.Limit-yielded)
		}
		evs, err := fetch(from, page)
		if err != nil {
			yield(nil, err)
			return
		}
		if r.Stats != nil {
			r.Stats.ItemsRead += len(evs)
		}
		for _, ev := range evs {
			if !yield(ev, nil) {
				return
			}
		}
		yielded += len(evs)
		if len(evs) < page || (r.Limit > 0 && yielded >= r.Limit) {
			return
		}
		from = evs[len(evs)-1].Sequence + 1
	}
}

// StoredColumns are the columns of the events table a read takes: the
// item's header and its payload.
const StoredColumns = `seq, end_seq, first_line, line_count, event_type, payload`

// StoredRow scans StoredColumns.
type StoredRow struct {
	seq, end, firstLine, lineCount int64
	typ                            int32
	payload                        []byte
}

// Dest are the destinations to scan StoredColumns into.
func (r *StoredRow) Dest() []any {
	return []any{&r.seq, &r.end, &r.firstLine, &r.lineCount, &r.typ, &r.payload}
}

// Stored is the item: its header from the columns, its payload read only
// when something needs more than the payload (storekit.ItemFromColumns).
func (r *StoredRow) Stored() *events.Stored {
	return storekit.ItemFromColumns(r.seq, r.end, r.firstLine, r.lineCount, r.typ, r.payload)
}
