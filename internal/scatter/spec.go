package scatter

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"
	"google.golang.org/protobuf/types/known/timestamppb"

	spoolv1 "github.com/spool-run/spool/gen/spool/v1"
	"github.com/spool-run/spool/internal/store"
)

// Bounds on a scatter. A batch is what one job reads on stdin; the batch
// input is shared by all of them and the gather, so it stays small (Step
// Functions counts it against the same 256 KiB as the items).
const (
	MaxBatches    = 100_000
	MaxBatchBytes = 16 << 20
	MaxBatchInput = 64 << 10
	// MaxRequestBytes: CreateScatter carries every batch.
	MaxRequestBytes = 256 << 20
)

// CheckSpec checks what is a scatter's own in spec (its jobs' params,
// queue and attempts are checked as any job's are) and fills in its
// defaults: the batch input, compacted, "{}" when none.
func CheckSpec(spec *spoolv1.ScatterSpec) error {
	if len(spec.GetParams().GetStdin()) > 0 || len(spec.GetGather().GetStdin()) > 0 {
		return invalid("params.stdin: a scatter's jobs read their input document on stdin; put shared data in batch_input")
	}
	if len(spec.GetParams().GetSecretNames()) > 0 || len(spec.GetGather().GetSecretNames()) > 0 {
		return invalid("params.secret_names: a scatter's jobs cannot have secrets; submit jobs with secrets one by one")
	}
	in := strings.TrimSpace(spec.GetBatchInput())
	switch {
	case in == "":
		in = "{}"
	case len(in) > MaxBatchInput:
		return invalid("batch_input: %d bytes; at most %d", len(in), MaxBatchInput)
	case !json.Valid([]byte(in)):
		return invalid("batch_input is not valid JSON")
	}
	var compact bytes.Buffer
	_ = json.Compact(&compact, []byte(in))
	spec.BatchInput = compact.String()
	if spec.GetMaxConcurrency() < 0 {
		return invalid("max_concurrency must not be negative (0: no limit)")
	}
	if spec.ToleratedFailureCount != nil && spec.GetToleratedFailureCount() < 0 {
		return invalid("tolerated_failure_count must not be negative")
	}
	if p := spec.ToleratedFailurePercentage; p != nil && (*p < 0 || *p > 100) {
		return invalid("tolerated_failure_percentage must be between 0 and 100, got %g", *p)
	}
	return nil
}

// New makes the record of a new scatter of a checked spec and its
// batches, and the batches as stored, after checking them: each a
// non-empty JSON array of items.
func New(spec *spoolv1.ScatterSpec, batches []string, now time.Time) (*store.ScatterRecord, [][]byte, error) {
	n := len(batches)
	if n == 0 {
		return nil, nil, invalid("batches: a scatter needs at least one batch of items")
	}
	if n > MaxBatches {
		return nil, nil, invalid("batches: %d is more than a scatter may have (%d); use bigger batches", n, MaxBatches)
	}
	stored := make([][]byte, n)
	var items int64
	for i, b := range batches {
		k, err := CountItems(b)
		if err != nil {
			return nil, nil, invalid("batches[%d]: %v", i, err)
		}
		items += int64(k)
		stored[i] = []byte(b)
	}
	return newRecord(spec, int32(n), items, now), stored, nil
}

// newRecord is the record of a new scatter of n batches.
func newRecord(spec *spoolv1.ScatterSpec, n int32, items int64, now time.Time) *store.ScatterRecord {
	at := timestamppb.New(now)
	sc := &spoolv1.Scatter{
		ScatterId: uuid.Must(uuid.NewV7()).String(),
		State:     spoolv1.ScatterState_SCATTER_STATE_RUNNING,
		Spec:      spec,
		Progress:  &spoolv1.ScatterProgress{BatchCount: n, Waiting: n, ItemCount: items},
		CreatedAt: at,
		UpdatedAt: at,
	}
	return &store.ScatterRecord{Scatter: sc, Active: true, Ended: store.NewBits(n), Failed: store.NewBits(n)}
}

// CountItems checks that a batch is a non-empty JSON array and counts its
// items.
func CountItems(batch string) (int, error) {
	if len(batch) > MaxBatchBytes {
		return 0, fmt.Errorf("%d bytes; a batch may hold at most %d", len(batch), MaxBatchBytes)
	}
	var items []json.RawMessage
	if err := json.Unmarshal([]byte(batch), &items); err != nil {
		return 0, fmt.Errorf("not a JSON array of items: %v", err)
	}
	if len(items) == 0 {
		return 0, errors.New("empty: leave empty batches out")
	}
	return len(items), nil
}

// Stop makes a scatter final: the batches never released, and those a
// redrive holds, count as cancelled. The round that follows winds the
// rest down.
func Stop(rec *store.ScatterRecord, st spoolv1.ScatterState, why string) {
	sc := rec.Scatter
	p := sc.GetProgress()
	sc.State, sc.Error = st, why
	never := func(i int32) {
		rec.Ended.Set(i)
		rec.Failed.Set(i)
		p.Cancelled++
	}
	for i := range rec.Released {
		if rec.Held.Has(i) {
			rec.Held.Clear(i)
			never(i)
		}
	}
	for i := rec.Released; i < p.GetBatchCount(); i++ {
		never(i)
	}
	p.Waiting = 0
}
