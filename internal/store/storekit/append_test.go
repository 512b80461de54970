package storekit_test

import (
	"bytes"
	"errors"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/spool-run/spool"
	spoolv1 "github.com/spool-run/spool/gen/spool/v1"
	"github.com/spool-run/spool/internal/events"
	"github.com/spool-run/spool/internal/store"
	"github.com/spool-run/spool/internal/store/storekit"
)

var batching = &spoolv1.BatchingConfig{MaxBatchSize: 50, MaxBatchBytes: 256 << 10}

// Every event kind is bounded at append, before compression: a line of
// 100 MB of zeros compresses to almost nothing, but no reader could ever
// decode it again.
func TestPlanAppendBoundsEveryEventKind(t *testing.T) {
	huge := bytes.Repeat([]byte{0}, 100<<20)
	now := timestamppb.Now()
	cases := map[string]*spoolv1.JobEvent{
		"a single output line": {Sequence: 1, Timestamp: now, EventType: spoolv1.EventType_EVENT_TYPE_OUTPUT_DATA,
			EventData: &spoolv1.JobEvent_OutputData{OutputData: &spoolv1.OutputEvent{Output: huge, Stream: spoolv1.StreamType_STREAM_TYPE_STDOUT}}},
		"a process error": {Sequence: 1, Timestamp: now, EventType: spoolv1.EventType_EVENT_TYPE_PROCESS_ERROR,
			EventData: &spoolv1.JobEvent_ProcessError{ProcessError: &spoolv1.ProcessErrorEvent{Message: string(huge)}}},
		"a process start": {Sequence: 1, Timestamp: now, EventType: spoolv1.EventType_EVENT_TYPE_PROCESS_START,
			EventData: &spoolv1.JobEvent_ProcessStart{ProcessStart: &spoolv1.ProcessStartEvent{Command: strings.Repeat("x", 2<<20)}}},
		"a batch": events.Batch{Sequence: 1, Lines: []events.Line{{Data: huge, Time: time.Now(), Stream: spoolv1.StreamType_STREAM_TYPE_STDOUT}}}.Event(),
	}
	for name, ev := range cases {
		_, err := storekit.PlanAppend(store.NewHead(), 1, batching, store.Limits{MaxItemBytes: 4 << 20}, events.Messages(ev))
		if !errors.Is(err, spool.ErrInvalidArgument) {
			t.Errorf("%s of %d bytes: %v, want refused", name, len(huge), err)
		}
	}
	// What fits is stored and decodes again.
	ok := events.Batch{Sequence: 1, Lines: events.TextLines(time.Now(), "a", "b")}.Event()
	plan, err := storekit.PlanAppend(store.NewHead(), 1, batching, store.Limits{MaxItemBytes: 4 << 20}, events.Messages(ok))
	if err != nil || len(plan.Items) != 1 {
		t.Fatalf("a small batch: %v", err)
	}
	if _, err := events.Decode(plan.Items[0].Payload); err != nil {
		t.Fatalf("stored item does not decode: %v", err)
	}
}
