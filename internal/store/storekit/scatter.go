package storekit

import (
	"encoding/json"
	"fmt"

	"google.golang.org/protobuf/proto"

	spoolv1 "github.com/spool-run/spool/gen/spool/v1"
	"github.com/spool-run/spool/internal/store"
)

// scatterBlob is how a scatter record is kept in one stored value by the
// stores that keep it so (SQLite, PostgreSQL, DynamoDB); its version and
// whether it is active are columns beside it, as the stores query them.
type scatterBlob struct {
	Scatter  []byte `json:"s"`
	Released int32  `json:"r"`
	Ended    []byte `json:"e"`
	Failed   []byte `json:"f"`
	// Held and Gen exist once a scatter was redriven; older records and
	// scatters never redriven leave them out.
	Held []byte `json:"h,omitempty"`
	Gen  []byte `json:"g,omitempty"`
}

// EncodeScatter encodes rec's scatter and bookkeeping (not Version and
// Active) for storing.
func EncodeScatter(rec *store.ScatterRecord) ([]byte, error) {
	s, err := proto.Marshal(rec.Scatter)
	if err != nil {
		return nil, fmt.Errorf("encode scatter %s: %w", rec.Scatter.GetScatterId(), err)
	}
	return json.Marshal(scatterBlob{Scatter: s, Released: rec.Released, Ended: rec.Ended, Failed: rec.Failed, Held: rec.Held, Gen: rec.Gen})
}

// DecodeScatter is EncodeScatter's inverse; version and active come from
// their columns.
func DecodeScatter(b []byte, version int64, active bool) (*store.ScatterRecord, error) {
	var blob scatterBlob
	if err := json.Unmarshal(b, &blob); err != nil {
		return nil, fmt.Errorf("stored scatter is corrupt: %w", err)
	}
	sc := &spoolv1.Scatter{}
	if err := proto.Unmarshal(blob.Scatter, sc); err != nil {
		return nil, fmt.Errorf("stored scatter is corrupt: %w", err)
	}
	n := sc.GetProgress().GetBatchCount()
	if want := len(store.NewBits(n)); len(blob.Ended) != want || len(blob.Failed) != want {
		return nil, fmt.Errorf("stored scatter %s is corrupt: its batch sets do not fit %d batches", sc.GetScatterId(), n)
	}
	if len(blob.Held) != 0 && len(blob.Held) != len(blob.Ended) || len(blob.Gen) != 0 && len(blob.Gen) != int(n) {
		return nil, fmt.Errorf("stored scatter %s is corrupt: its redriven batches do not fit %d batches", sc.GetScatterId(), n)
	}
	return &store.ScatterRecord{
		Scatter: sc, Version: version, Active: active, Released: blob.Released,
		Ended: blob.Ended, Failed: blob.Failed, Held: nilIfEmpty(blob.Held), Gen: nilIfEmpty(blob.Gen),
	}, nil
}

// CloneScatter returns a deep copy of rec, for stores that keep records in
// memory and must not share them with callers.
func CloneScatter(rec *store.ScatterRecord) *store.ScatterRecord {
	c := *rec
	c.Scatter = proto.Clone(rec.Scatter).(*spoolv1.Scatter)
	c.Ended = append(store.Bits(nil), rec.Ended...)
	c.Failed = append(store.Bits(nil), rec.Failed...)
	c.Held = nilIfEmpty(append(store.Bits(nil), rec.Held...))
	c.Gen = nilIfEmpty(append([]byte(nil), rec.Gen...))
	return &c
}

// nilIfEmpty keeps "never redriven" one value (nil), however a record
// was read or copied.
func nilIfEmpty[S ~[]byte](b S) S {
	if len(b) == 0 {
		return nil
	}
	return b
}
