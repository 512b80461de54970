package demo

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"
)

// TestDemo runs `spool demo` and checks its figures: what the issue and
// DESIGN promise for a 10,000-line job.
func TestDemo(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	var out bytes.Buffer
	f, err := Run(ctx, Options{Out: &out})
	t.Log("\n" + out.String())
	if err != nil {
		t.Fatal(err)
	}
	if f.Lines != 10000 || f.FollowedLive != 10000 {
		t.Fatalf("%d lines stored, %d followed live; want 10,000 each", f.Lines, f.FollowedLive)
	}
	if r := f.WriteReduction(); r < 40 {
		t.Fatalf("batching wrote %d items for %d: only %.1fx fewer, want at least 40x", f.StoredItems, f.Unbatched, r)
	}
	if f.ReplayFirst != "line 9000" || f.ReplayLast != "line 10000" || f.ReplayLines != 1001 {
		t.Fatalf("replay from 9,000: %d lines from %q to %q", f.ReplayLines, f.ReplayFirst, f.ReplayLast)
	}
	// 20 batches of 50 lines hold lines 9,000-10,000 (21 if 9,000 starts
	// mid-batch), plus PROCESS_END; a few flushes may be smaller than 50.
	if f.ReplayItemsRead < 21 || f.ReplayItemsRead > 30 {
		t.Fatalf("replay from 9,000 read %d stored items, want about 22", f.ReplayItemsRead)
	}
	if b := f.BytesPerOutputByte(); b >= 1 {
		t.Fatalf("stored %.2f bytes per byte of output; compression should keep it below 1", b)
	}
	for _, want := range []string{"fewer writes", "replaying from line 9000", "line 9000"} {
		if !strings.Contains(out.String(), want) {
			t.Fatalf("the report does not say %q", want)
		}
	}
}
