package outbox

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	spoolv1 "github.com/spool-run/spool/gen/spool/v1"
	"github.com/spool-run/spool/internal/events"
)

func ev(seq int64, text string) *spoolv1.JobEvent {
	return events.Batch{Sequence: seq, Lines: events.TextLines(time.Now(), text), Untimed: true}.Event()
}

func header() Header {
	return Header{JobID: "job1", Queue: "q", Attempt: 2, Token: "tok", Server: "http://x"}
}

// drain reads everything until the result, acknowledging as it goes.
func drain(t *testing.T, o *Outbox, maxEvents int) ([]int64, *spoolv1.JobResult) {
	t.Helper()
	var seqs []int64
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for {
		c, err := o.Next(ctx, maxEvents, 1<<20)
		if err == io.EOF {
			return seqs, nil
		}
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range c.Events {
			seqs = append(seqs, e.Sequence())
		}
		o.Ack(c)
		if c.Result != nil {
			if _, err := o.Next(ctx, maxEvents, 1<<20); err != io.EOF {
				t.Fatalf("after the result: %v, want EOF", err)
			}
			return seqs, c.Result
		}
	}
}

func TestAppendReadAckAcrossSegments(t *testing.T) {
	root := t.TempDir()
	o, err := Create(root, header())
	if err != nil {
		t.Fatal(err)
	}
	o.segBytes = 200 // a few records per segment
	for i := int64(1); i <= 100; i++ {
		if err := o.Append(ev(i, "some output line")); err != nil {
			t.Fatal(err)
		}
	}
	if err := o.Finish(&spoolv1.JobResult{ExitCode: 7}); err != nil {
		t.Fatal(err)
	}
	if err := o.Append(ev(101, "late")); err == nil {
		t.Fatal("append after the result was accepted")
	}
	segs, _ := o.segments()
	if len(segs) < 5 {
		t.Fatalf("only %d segments with 200-byte segments", len(segs))
	}
	seqs, res := drain(t, o, 7)
	if len(seqs) != 100 || seqs[0] != 1 || seqs[99] != 100 || res.GetExitCode() != 7 {
		t.Fatalf("read %d events (%v…), result %v", len(seqs), seqs[:min(3, len(seqs))], res)
	}
	if segs, _ := o.segments(); len(segs) != 1 {
		t.Fatalf("%d segments left after everything was acknowledged, want only the last", len(segs))
	}
	if err := o.Remove(); err != nil {
		t.Fatal(err)
	}
	if left, _ := os.ReadDir(root); len(left) != 0 {
		t.Fatalf("Remove left %v", left)
	}
}

func TestNextWaitsForAppend(t *testing.T) {
	o, err := Create(t.TempDir(), header())
	if err != nil {
		t.Fatal(err)
	}
	defer o.Remove()
	got := make(chan Chunk)
	go func() {
		c, err := o.Next(context.Background(), 10, 1<<20)
		if err != nil {
			t.Error(err)
		}
		got <- c
	}()
	select {
	case <-got:
		t.Fatal("Next returned before anything was appended")
	case <-time.After(50 * time.Millisecond):
	}
	if err := o.Append(ev(1, "x")); err != nil {
		t.Fatal(err)
	}
	select {
	case c := <-got:
		if len(c.Events) != 1 {
			t.Fatalf("%d events", len(c.Events))
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Next did not wake up")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := o.Next(ctx, 10, 1<<20); err != nil && !errors.Is(err, context.Canceled) {
		t.Fatalf("unacknowledged records: %v", err)
	}
}

// TestReopenAfterCrash: a worker killed mid-write leaves a torn record;
// reopening drops it and keeps every whole record, unacknowledged ones
// included.
func TestReopenAfterCrash(t *testing.T) {
	root := t.TempDir()
	o, err := Create(root, header())
	if err != nil {
		t.Fatal(err)
	}
	o.segBytes = 300
	for i := int64(1); i <= 20; i++ {
		if err := o.Append(ev(i, "line")); err != nil {
			t.Fatal(err)
		}
	}
	c, err := o.Next(context.Background(), 5, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	o.Ack(c)
	wseg := o.wSeg
	o.Close()
	// Half a record at the end, as a kill -9 during write leaves it.
	rec := appendRecord(nil, kindEvent, []byte("0123456789"))
	f, _ := os.OpenFile(o.segPath(wseg), os.O_APPEND|os.O_WRONLY, 0)
	f.Write(rec[:len(rec)-3])
	f.Close()

	dirs, err := List(root)
	if err != nil || len(dirs) != 1 {
		t.Fatalf("List: %v %v", dirs, err)
	}
	r, err := Open(dirs[0])
	if err != nil {
		t.Fatal(err)
	}
	if r.Header() != header() {
		t.Fatalf("header %+v", r.Header())
	}
	if err := r.Append(ev(21, "after restart")); err != nil {
		t.Fatal(err)
	}
	if err := r.Finish(&spoolv1.JobResult{}); err != nil {
		t.Fatal(err)
	}
	seqs, res := drain(t, r, 100)
	if res == nil || seqs[len(seqs)-1] != 21 {
		t.Fatalf("after reopening: %v result %v", seqs, res)
	}
	// Events are resent from the oldest segment still on disk: possibly a
	// few already acknowledged (the server ignores repeats), never a gap.
	for i := 1; i < len(seqs); i++ {
		if seqs[i] != seqs[i-1]+1 {
			t.Fatalf("gap after reopening: %v", seqs)
		}
	}
	r.Remove()
}

func TestReadRecordRejectsCorruption(t *testing.T) {
	good := appendRecord(nil, kindEvent, []byte("payload"))
	k, p, n, err := parseRecord(good)
	if err != nil || k != kindEvent || string(p) != "payload" || n != len(good) {
		t.Fatalf("good record: %d %q %d %v", k, p, n, err)
	}
	bad := bytes.Clone(good)
	bad[3] ^= 1
	if _, _, _, err := parseRecord(bad); !errors.Is(err, errTorn) {
		t.Fatalf("flipped bit: %v", err)
	}
	if _, _, n, err := parseRecord(good[:len(good)-1]); !errors.Is(err, errShort) || n != len(good) {
		t.Fatalf("short record: %d bytes, %v", n, err)
	}
	if _, _, _, err := parseRecord([]byte{0xff, 0xff, 0xff, 0xff, 0x7f}); !errors.Is(err, errTorn) {
		t.Fatalf("huge length: %v", err)
	}
}

func TestOpenMissing(t *testing.T) {
	if _, err := Open(filepath.Join(t.TempDir(), "nope")); err == nil {
		t.Fatal("opened a missing outbox")
	}
}

// An outbox whose worker died as it made it (its file holds nothing) is
// nothing to resume: Open says so and removes it.
func TestOpenEmpty(t *testing.T) {
	root := t.TempDir()
	if err := os.WriteFile(filepath.Join(root, "job1-a2.00000001.seg"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	paths, err := List(root)
	if err != nil || len(paths) != 1 {
		t.Fatalf("List: %v %v", paths, err)
	}
	if _, err := Open(paths[0]); !errors.Is(err, ErrEmpty) {
		t.Fatalf("Open: %v, want ErrEmpty", err)
	}
	if left, _ := os.ReadDir(root); len(left) != 0 {
		t.Fatalf("left %v", left)
	}
}

// TestOutboxesSideBySide: outboxes whose names begin alike (attempts 1
// and 12 of one job) each find only their own segments.
func TestOutboxesSideBySide(t *testing.T) {
	root := t.TempDir()
	for _, attempt := range []int32{1, 12} {
		o, err := Create(root, Header{JobID: "job1", Attempt: attempt})
		if err != nil {
			t.Fatal(err)
		}
		o.segBytes = 100 // a record or two per segment
		for i := int64(1); i <= int64(attempt)+2; i++ {
			if err := o.Append(ev(i, "some output line")); err != nil {
				t.Fatal(err)
			}
		}
		if err := o.Finish(&spoolv1.JobResult{ExitCode: attempt}); err != nil {
			t.Fatal(err)
		}
		if err := o.Close(); err != nil {
			t.Fatal(err)
		}
	}
	paths, err := List(root)
	if err != nil || len(paths) != 2 {
		t.Fatalf("List: %v %v, want two outboxes", paths, err)
	}
	for _, p := range paths {
		o, err := Open(p)
		if err != nil {
			t.Fatal(err)
		}
		seqs, res := drain(t, o, 100)
		if want := int(o.Header().Attempt) + 2; len(seqs) != want || res.GetExitCode() != o.Header().Attempt {
			t.Fatalf("%s: read %v and exit code %d, want %d events and exit code %d", p, seqs, res.GetExitCode(), want, o.Header().Attempt)
		}
		if err := o.Remove(); err != nil {
			t.Fatal(err)
		}
	}
	if left, _ := os.ReadDir(root); len(left) != 0 {
		t.Fatalf("Remove left %v", left)
	}
}

// TestChunkBytes: a chunk holds at most maxBytes of records, so a publish
// stays within what the server accepts, unless its first record alone is
// larger; nothing is skipped.
func TestChunkBytes(t *testing.T) {
	o, err := Create(t.TempDir(), header())
	if err != nil {
		t.Fatal(err)
	}
	defer o.Close()
	line := string(bytes.Repeat([]byte("x"), 1000))
	for i := int64(1); i <= 5; i++ {
		if err := o.Append(ev(i, line)); err != nil {
			t.Fatal(err)
		}
	}
	if err := o.Append(ev(6, line+line+line)); err != nil {
		t.Fatal(err)
	}
	if err := o.Finish(&spoolv1.JobResult{}); err != nil {
		t.Fatal(err)
	}
	// Each small record is a little over 1,000 bytes: two fit in 2,500.
	const maxBytes = 2500
	var got [][]int64
	for {
		c, err := o.Next(context.Background(), 100, maxBytes)
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		var seqs []int64
		for _, e := range c.Events {
			seqs = append(seqs, e.Sequence())
		}
		got = append(got, seqs)
		o.Ack(c)
	}
	// 6 alone is over the limit; the result goes with it (it is sent in a
	// call of its own, so it adds nothing to the publish).
	want := "[[1 2] [3 4] [5] [6]]"
	if fmt.Sprint(got) != want {
		t.Fatalf("chunks %v, want %s", got, want)
	}
}

// TestBatchesCarryLineNumbers: batches read back carry the line numbers
// their lines have in the job's log, from the header's first line on, both
// those the batcher wrote and those a sealed outbox batches itself; an
// outbox whose header does not say leaves them 0 for the server.
func TestBatchesCarryLineNumbers(t *testing.T) {
	for _, first := range []int64{40, 0} {
		h := header()
		h.FirstLine, h.Batch = first, BatchLimits{MaxLines: 2}
		o, err := Create(t.TempDir(), h)
		if err != nil {
			t.Fatal(err)
		}
		lines := events.TextLines(time.Now(), "a", "b", "c", "d", "e")
		if err := o.AppendLines(lines); err != nil {
			t.Fatal(err)
		}
		if err := o.AppendBatch(events.Batch{Sequence: 3, Attempt: 2, Lines: lines[:2]}); err != nil {
			t.Fatal(err)
		}
		o.Seal() // the batcher's last lines never made a batch
		var got [][2]int64
		ctx := context.Background()
		for {
			c, err := o.Next(ctx, 10, 1<<20)
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			for _, e := range c.Events {
				got = append(got, [2]int64{e.Sequence(), e.Message().GetOutputBatch().GetFirstLine()})
			}
			o.Ack(c)
		}
		want := [][2]int64{{3, first}, {5, first + 2}, {7, first + 4}}
		if first == 0 {
			want = [][2]int64{{3, 0}, {5, 0}, {7, 0}}
		}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("header first line %d: (sequence, first_line) read back %v, want %v", first, got, want)
		}
	}
}

// TestReadsAcrossItsReadAhead: records are read a span at a time; one that
// a span ends inside is read by the next, and one larger than a span is
// read whole.
func TestReadsAcrossItsReadAhead(t *testing.T) {
	o, err := Create(t.TempDir(), header())
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	add := func(texts ...string) {
		lines := events.TextLines(time.Now(), texts...)
		if err := o.AppendLines(lines); err != nil {
			t.Fatal(err)
		}
		if err := o.AppendBatch(events.Batch{Sequence: int64(len(want) + 1), Lines: lines}); err != nil {
			t.Fatal(err)
		}
		want = append(want, texts...)
	}
	line := string(bytes.Repeat([]byte("x"), 1000))
	for i := range 3000 {
		add(fmt.Sprint(i, line))
	}
	add(string(bytes.Repeat([]byte("y"), readAhead+readAhead/2)))
	add("last")
	if err := o.Finish(&spoolv1.JobResult{}); err != nil {
		t.Fatal(err)
	}
	var got []string
	for {
		c, err := o.Next(context.Background(), 64, 8<<20)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range c.Events {
			for _, out := range e.Message().GetOutputBatch().GetOutputs() {
				got = append(got, string(out.GetOutput()))
			}
		}
		o.Ack(c)
		if c.Result != nil {
			break
		}
	}
	if len(got) != len(want) {
		t.Fatalf("read %d lines, want %d", len(got), len(want))
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("line %d differs (%d bytes, want %d)", i, len(got[i]), len(want[i]))
		}
	}
}

// TestHold: records appended while held reach the disk (and the reader)
// together when released, in order; the result writes what is held before
// itself.
func TestHold(t *testing.T) {
	o, err := Create(t.TempDir(), header())
	if err != nil {
		t.Fatal(err)
	}
	lines := events.TextLines(time.Now(), "a", "b", "c")
	o.Hold()
	if err := o.AppendLines(lines); err != nil {
		t.Fatal(err)
	}
	if err := o.AppendBatch(events.Batch{Sequence: 1, Lines: lines[:2]}); err != nil {
		t.Fatal(err)
	}
	if fi, _ := os.Stat(o.segPath(1)); fi.Size() != 0 {
		t.Fatalf("held records reached the disk before the release: %d bytes", fi.Size())
	}
	if err := o.Release(); err != nil {
		t.Fatal(err)
	}
	c, err := o.Next(context.Background(), 10, 1<<20)
	if err != nil || len(c.Events) != 1 || c.Events[0].LineCount() != 2 {
		t.Fatalf("after the release: %+v, %v; want the batch of two lines", c, err)
	}
	o.Ack(c)
	o.Hold()
	if err := o.AppendBatch(events.Batch{Sequence: 3, Lines: lines[2:]}); err != nil {
		t.Fatal(err)
	}
	if err := o.Finish(&spoolv1.JobResult{ExitCode: 4}); err != nil {
		t.Fatal(err)
	}
	if err := o.Release(); err != nil {
		t.Fatal(err)
	}
	seqs, res := drain(t, o, 10)
	if fmt.Sprint(seqs) != "[3]" || res.GetExitCode() != 4 {
		t.Fatalf("read %v and result %v, want batch 3 then the result", seqs, res)
	}
}
