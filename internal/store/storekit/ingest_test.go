package storekit_test

import (
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"google.golang.org/protobuf/proto"

	spoolv1 "github.com/spool-run/spool/gen/spool/v1"
	"github.com/spool-run/spool/internal/events"
	"github.com/spool-run/spool/internal/store"
	"github.com/spool-run/spool/internal/store/storekit"
)

// FuzzIngestLayout: whatever the messages and the batching config, the
// layout of ingested events keeps every byte of every message, in order,
// on consecutive lines, in batches within the config; and laying out the
// accepted records again, call by call, gives the same items (what makes a
// rebuilt log identical).
func FuzzIngestLayout(f *testing.F) {
	f.Add("one\ntwo\n\nfour", "0123456789abcdefghijéé", "", uint8(4), uint16(10), uint8(2))
	f.Add("a", "b", "c", uint8(1), uint16(1), uint8(1))
	f.Add(strings.Repeat("x", 300), "\n\n\n", "ü\nü", uint8(50), uint16(7), uint8(3))
	f.Fuzz(func(t *testing.T, m1, m2, m3 string, size uint8, bytes uint16, perCall uint8) {
		cfg := &spoolv1.BatchingConfig{MaxBatchSize: int32(size%60) + 1, MaxBatchBytes: int64(bytes%2000) + 1}
		msgs := []string{m1, m2, m3, m2 + m1, m3}
		per := int(perCall%4) + 1
		head := store.NewHead()
		var (
			stored   []*spoolv1.JobEvent
			accepted []store.Accepted
		)
		for i := 0; i < len(msgs); i += per {
			var call []store.RawEvent
			for k, m := range msgs[i:min(i+per, len(msgs))] {
				call = append(call, store.RawEvent{ID: string(rune('a' + i + k)), Time: time.UnixMilli(int64(1 + i + k)), Message: m})
			}
			plan, acc, err := storekit.PlanIngest(head, cfg, store.Limits{}, call)
			if err != nil {
				t.Fatalf("PlanIngest: %v", err)
			}
			for _, it := range plan.Items {
				stored = append(stored, it.Event)
				if n := events.LineCount(it.Event); n > int64(cfg.MaxBatchSize) || events.OutputBytes(it.Event) > cfg.MaxBatchBytes {
					t.Fatalf("a batch of %d lines and %d bytes, over the config %v", n, events.OutputBytes(it.Event), cfg)
				}
			}
			accepted = append(accepted, acc...)
			head = plan.Head
		}
		// Every message is there, on its own lines, in order.
		var lines []*spoolv1.OutputItem
		for _, ev := range stored {
			lines = append(lines, ev.GetOutputBatch().GetOutputs()...)
		}
		for i, a := range accepted {
			var text strings.Builder
			for k := a.Line; k < a.Line+a.Lines; k++ {
				o := lines[k-1]
				text.Write(o.GetOutput())
				if !o.GetPartial() && k < a.Line+a.Lines-1 {
					text.WriteByte('\n')
				}
			}
			if text.String() != msgs[i] {
				t.Fatalf("message %d %q came back as %q", i, msgs[i], text.String())
			}
			if utf8.ValidString(msgs[i]) {
				for k := a.Line; k < a.Line+a.Lines; k++ {
					if !utf8.Valid(lines[k-1].GetOutput()) && len(lines[k-1].GetOutput()) >= utf8.UTFMax {
						t.Fatalf("line %d cuts a character of message %d: %q", k, i, lines[k-1].GetOutput())
					}
				}
			}
		}
		if head.NextLine-1 != int64(len(lines)) {
			t.Fatalf("head says %d lines, the batches hold %d", head.NextLine-1, len(lines))
		}
		rebuilt, err := storekit.RebuildEvents(cfg, store.Limits{}, accepted)
		if err != nil {
			t.Fatalf("RebuildEvents: %v", err)
		}
		if len(rebuilt) != len(stored) {
			t.Fatalf("rebuilt %d items, stored %d", len(rebuilt), len(stored))
		}
		for i := range stored {
			if !proto.Equal(rebuilt[i], stored[i]) {
				t.Fatalf("rebuilt item %d differs from the stored one", i)
			}
		}
	})
}
