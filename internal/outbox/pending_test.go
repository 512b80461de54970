package outbox

import (
	"context"
	"testing"
	"time"

	spoolv1 "github.com/spool-run/spool/gen/spool/v1"
	"github.com/spool-run/spool/internal/events"
)

// TestPending: what is written waits until acknowledged, across segments,
// and nothing waits once everything is; a batch read back says when its
// first line was read, to the millisecond the outbox keeps.
func TestPending(t *testing.T) {
	o, err := Create(t.TempDir(), header())
	if err != nil {
		t.Fatal(err)
	}
	o.segBytes = 200 // a few records per segment
	if n := o.Pending(); n != 0 {
		t.Fatalf("a new outbox has %d bytes pending", n)
	}
	read := time.UnixMilli(1_700_000_000_123)
	lines := events.TextLines(read, "a line of output", "another")
	if err := o.AppendLines(lines); err != nil {
		t.Fatal(err)
	}
	if err := o.AppendBatch(events.Batch{Sequence: 1, Attempt: 2, Lines: lines}); err != nil {
		t.Fatal(err)
	}
	for i := int64(3); i <= 20; i++ {
		if err := o.Append(ev(i, "some output line")); err != nil {
			t.Fatal(err)
		}
	}
	if err := o.Finish(&spoolv1.JobResult{}); err != nil {
		t.Fatal(err)
	}
	segs, _ := o.segments()
	all := o.Pending()
	if len(segs) < 3 || all < 20*16 {
		t.Fatalf("%d bytes pending in %d segments after 20 events", all, len(segs))
	}

	ctx := context.Background()
	c, err := o.Next(ctx, 1, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	if got := c.Events[0].FirstLineTime(); !got.Equal(read) {
		t.Errorf("the batch's first line was read at %v, the outbox says %v", read, got)
	}
	// Reading acknowledges the line records (they wait in memory for their
	// batch from then on), not the batch.
	read1 := o.Pending()
	if read1 > all || read1 <= 0 {
		t.Errorf("after reading the first batch %d bytes are pending, of %d", read1, all)
	}
	o.Ack(c)
	if n := o.Pending(); n >= read1 || n <= 0 {
		t.Errorf("after the first chunk was acknowledged %d bytes are pending, of %d", n, read1)
	}
	drain(t, o, 5)
	if n := o.Pending(); n != 0 {
		t.Errorf("everything acknowledged, %d bytes still pending", n)
	}
	if ev := MessageEvent(ev(1, "x")); !ev.FirstLineTime().IsZero() {
		t.Error("an event that is not a batch has a first line time")
	}
}
