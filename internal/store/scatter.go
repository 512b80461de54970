package store

import (
	"context"
	"errors"

	"github.com/spool-run/spool"
	spoolv1 "github.com/spool-run/spool/gen/spool/v1"
	"github.com/spool-run/spool/internal/apierr"
)

// ScatterStore keeps scatters: a scatter's record, which its drivers
// rewrite (compare-and-set on Version), and the items of each of its
// batches, written once when it is created. Every backend implements it;
// the rules (what a round of the driver does) live in the service core, so
// a store only has to store.
type ScatterStore interface {
	// CreateScatter stores a new scatter, version 1, with its batches'
	// items (batches[i] is batch i's compact JSON array). The record and
	// the batches are visible together or not at all: a record is written
	// last (or in the same transaction). A scatter id in use is
	// spool.ErrAlreadyExists.
	CreateScatter(ctx context.Context, rec *ScatterRecord, batches [][]byte) error
	// GetScatter returns a scatter's record, or spool.ErrNotFound.
	GetScatter(ctx context.Context, id string) (*ScatterRecord, error)
	// ListScatters returns records newest first (by id, which is time
	// ordered) and the cursor of the next page ("" on the last page). With
	// f.Active, only the records whose Active is set.
	ListScatters(ctx context.Context, f ScatterFilter) ([]*ScatterRecord, string, error)
	// UpdateScatter replaces the record whose stored Version is
	// rec.Version, writing rec with Version+1 (and setting rec.Version to
	// it). When the stored version differs it writes nothing and returns
	// ErrScatterMoved: someone else moved the scatter on, read it again.
	UpdateScatter(ctx context.Context, rec *ScatterRecord) error
	// ScatterBatch returns the items of batch index of a scatter, as
	// stored, or spool.ErrNotFound.
	ScatterBatch(ctx context.Context, id string, index int32) ([]byte, error)
}

// ScatterFilter selects and pages scatters for ListScatters.
type ScatterFilter struct {
	// Active keeps only the scatters someone still has to drive.
	Active bool
	Limit  int
	Cursor string
}

// ScatterRecord is a scatter as stored: what the API shows, and the
// driver's bookkeeping beside it.
type ScatterRecord struct {
	Scatter *spoolv1.Scatter
	// Version counts the record's writes; UpdateScatter compares it.
	Version int64
	// Active is set while the scatter has batches or a gather to watch:
	// until it is final and none of its jobs is queued or running.
	Active bool
	// Released counts the batches handed to the queue: batches
	// 0..Released-1 have (or are about to have) their jobs.
	Released int32
	// Ended has bit i set once batch i's job ended (or the batch was never
	// run because the scatter stopped), Failed once it ended other than
	// succeeded. Bit i is bit i%8 of byte i/8. Each batch is counted into
	// the scatter's progress when its bit is set, so exactly once.
	Ended, Failed Bits
	// Held has bit i set while batch i waits to run again after a redrive:
	// the redrive took it out of Ended and Failed, and a round hands it to
	// the queue when the concurrency limit allows, as it releases a new
	// batch. Nil until the first redrive.
	Held Bits
	// Gen[i] is the redrive whose job runs batch i (0: the first run).
	// A redrive gives the batches it runs again new jobs, as their old
	// jobs keep their logs and ids, so the job of a batch depends on it.
	// Nil until the first redrive.
	Gen []byte
}

// Bits is a set of batch indexes, packed eight to a byte.
type Bits []byte

// NewBits returns an empty set for n batches.
func NewBits(n int32) Bits { return make(Bits, (n+7)/8) }

// Has reports whether i is in the set. A nil set holds nothing.
func (b Bits) Has(i int32) bool { return int(i/8) < len(b) && b[i/8]&(1<<(i%8)) != 0 }

// Clear removes i from the set.
func (b Bits) Clear(i int32) { b[i/8] &^= 1 << (i % 8) }

// Set adds i to the set.
func (b Bits) Set(i int32) { b[i/8] |= 1 << (i % 8) }

// Count returns how many indexes the set holds.
func (b Bits) Count() int32 {
	var n int32
	for _, x := range b {
		for ; x != 0; x &= x - 1 {
			n++
		}
	}
	return n
}

// ScatterNotFound is the error for a scatter id no store knows.
func ScatterNotFound(id string) error {
	return apierr.Errorf(spool.ErrNotFound, "scatter %q not found", id)
}

// ScatterExists is the error for creating a scatter whose id is in use.
func ScatterExists(id string) error {
	return apierr.Errorf(spool.ErrAlreadyExists, "scatter %q already exists", id)
}

// ErrScatterMoved is UpdateScatter's answer when the stored record is not
// the version the caller read: another driver moved the scatter on. It
// never reaches a client: the driver reads the record again.
var ErrScatterMoved = errors.New("the scatter was changed meanwhile")
