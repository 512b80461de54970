package client_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/spool-run/spool/client"
	spoolv1 "github.com/spool-run/spool/gen/spool/v1"
	"github.com/spool-run/spool/internal/events"
	"github.com/spool-run/spool/spooltest"
)

// batch is an OUTPUT_BATCH of sequences from..to whose lines are their
// sequence numbers.
func batch(from, to int64) *spoolv1.JobEvent {
	var texts []string
	for s := from; s <= to; s++ {
		texts = append(texts, strconv.FormatInt(s, 10))
	}
	return events.Batch{Sequence: from, FirstLine: from, Lines: events.TextLines(time.Unix(0, 0), texts...), Untimed: true}.Event()
}

// drain reads the buffer to its end and returns the sequences read.
func drain(b *client.EventBuffer) []int64 {
	var seqs []int64
	for ev, ok := b.Next(); ok; ev, ok = b.Next() {
		seqs = append(seqs, ev.GetSequence())
	}
	return seqs
}

func wantSeqs(t *testing.T, what string, got []int64, from, to int64) {
	t.Helper()
	if int64(len(got)) != to-from+1 || (len(got) > 0 && (got[0] != from || got[len(got)-1] != to)) {
		t.Fatalf("%s: got sequences %v, want %d..%d", what, got, from, to)
	}
	for i := 1; i < len(got); i++ {
		if got[i] != got[i-1]+1 {
			t.Fatalf("%s: %v is not consecutive", what, got)
		}
	}
}

func TestEventBuffer(t *testing.T) {
	b := client.NewEventBuffer(25)
	b.AddBatch(batch(1, 50)) // a batch larger than the buffer: only its last 25 (26..50) are kept
	if b.Len() != 26 {
		t.Fatalf("Len = %d after a batch of 1..50 from 25, want 26", b.Len())
	}
	first, _ := b.Next()
	if d := first.GetOutputData(); first.GetSequence() != 25 || string(d.GetOutput()) != "25" || d.GetLineNumber() != 25 {
		t.Fatalf("first event: %v", first)
	}
	b.AddBatch(batch(51, 100))
	b.AddBatch(batch(41, 60)) // already buffered: ignored
	wantSeqs(t, "read on", drain(b), 26, 100)
	if b.Len() != 0 {
		t.Fatalf("Len = %d after reading everything", b.Len())
	}

	b.Rewind(75)
	if b.Len() != 26 {
		t.Fatalf("Len = %d after Rewind(75), want 26", b.Len())
	}
	wantSeqs(t, "after Rewind(75)", drain(b), 75, 100)
	b.Rewind(1)
	wantSeqs(t, "after Rewind(1)", drain(b), 25, 100)
	b.Rewind(1000)
	if _, ok := b.Next(); ok {
		t.Fatal("Rewind past the end left something to read")
	}

	// Trim keeps the read position on the same event.
	b.Rewind(60)
	b.Trim(50)
	if ev, _ := b.Next(); ev.GetSequence() != 60 {
		t.Fatalf("after Trim(50) Next is %d, want 60", ev.GetSequence())
	}
	b.Rewind(1)
	wantSeqs(t, "after Trim(50)", drain(b), 50, 100)
	b.AddBatch(batch(1, 55)) // below what was trimmed: ignored
	if b.Len() != 0 {
		t.Fatal("a batch below the trimmed part was added")
	}

	// Non-output events are kept as they are, in order.
	end := &spoolv1.JobEvent{Sequence: 101, EventType: spoolv1.EventType_EVENT_TYPE_PROCESS_END,
		EventData: &spoolv1.JobEvent_ProcessEnd{ProcessEnd: &spoolv1.ProcessEndEvent{ExitCode: 2}}}
	b.AddBatch(end)
	if ev, _ := b.Next(); ev != end {
		t.Fatalf("Next = %v, want the PROCESS_END added", ev)
	}
}

// TestEventBufferWithBatches: the buffer fed by the low-level iterator
// replays a part of the log without asking the server again.
func TestEventBufferWithBatches(t *testing.T) {
	srv := spooltest.NewServer(t)
	c := srv.Client()
	job := spooltest.RunJob(t, srv, spooltest.Seq(1, 300)...)
	buf := client.NewEventBuffer(75)
	var seqs []int64
	for ev, err := range c.Events(context.Background(), job.GetJobId(), client.StreamOptions{FromSequence: 75}).Batches() {
		if err != nil {
			t.Fatal(err)
		}
		buf.AddBatch(ev)
		seqs = append(seqs, drain(buf)...)
	}
	wantSeqs(t, "streamed", seqs, 75, 302)
	srv.Stop()
	buf.Rewind(200)
	got := drain(buf)
	wantSeqs(t, "rewound with the server gone", got, 200, 302)
}
