package conformance

import (
	"bytes"
	"context"
	"slices"
	"strconv"
	"testing"
	"time"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"github.com/spool-run/spool"
	spoolv1 "github.com/spool-run/spool/gen/spool/v1"
	"github.com/spool-run/spool/internal/events"
	"github.com/spool-run/spool/internal/store"
	"github.com/spool-run/spool/internal/store/storekit"
)

// readItems reads stored items and returns them with the store's count of
// items fetched.
func readItems(t *testing.T, s store.JobStore, r store.ReadRequest) ([]*spoolv1.JobEvent, int) {
	t.Helper()
	stats := &store.ReadStats{}
	r.Stats = stats
	var out []*spoolv1.JobEvent
	for ev, err := range storekit.Read(context.Background(), s, r) {
		if err != nil {
			t.Fatalf("Read: %v", err)
		}
		out = append(out, ev)
	}
	if stats.ItemsRead < len(out) {
		t.Fatalf("store counted %d items read but yielded %d", stats.ItemsRead, len(out))
	}
	return out, stats.ItemsRead
}

// feedAll replays a job through a Feed (not following) and unpacks it to
// one event per line.
func feedAll(t *testing.T, s store.JobStore, r storekit.FeedRequest) []*spoolv1.JobEvent {
	t.Helper()
	var out []*spoolv1.JobEvent
	for ev, err := range storekit.NewFeed(s, r).Events(context.Background()) {
		if err != nil {
			t.Fatalf("Feed: %v", err)
		}
		out = append(out, events.Unpack(ev)...)
	}
	return out
}

func sequences(evs []*spoolv1.JobEvent) []int64 {
	out := make([]int64, len(evs))
	for i, ev := range evs {
		out[i] = ev.GetSequence()
	}
	return out
}

// wantContiguous checks evs hold exactly the sequences from..to in order.
func wantContiguous(t *testing.T, evs []*spoolv1.JobEvent, from, to int64) {
	t.Helper()
	if int64(len(evs)) != to-from+1 {
		t.Fatalf("got %d events, want sequences %d..%d (%d)", len(evs), from, to, to-from+1)
	}
	for i, ev := range evs {
		if ev.GetSequence() != from+int64(i) {
			t.Fatalf("event %d has sequence %d, want %d", i, ev.GetSequence(), from+int64(i))
		}
	}
}

func testAppend(t *testing.T, b Backend) {
	s := open(t, b)
	ctx := context.Background()
	l := runningJob(t, s, newJob(newQueue()))
	first := []*spoolv1.JobEvent{startEvent(1), batchEvent(2, numbered(1, 50)...)}
	h, err := s.Append(ctx, l.LeaseRef, events.Messages(first...))
	if err != nil {
		t.Fatal(err)
	}
	if h != (store.Head{NextSequence: 52, NextLine: 51}) {
		t.Fatalf("head after 1 event + 50 lines: %+v", h)
	}
	// Re-sending (all of it, or a part) changes nothing.
	for _, again := range [][]*spoolv1.JobEvent{first, first[1:], first[:1]} {
		if h2, err := s.Append(ctx, l.LeaseRef, events.Messages(again...)); err != nil || h2 != h {
			t.Fatalf("re-sent events: head %+v err %v, want %+v and no error", h2, err, h)
		}
	}
	// A repeat may be followed by new events in the same call.
	h, err = s.Append(ctx, l.LeaseRef, events.Messages(first[1], batchEvent(52, "51", "52")))
	if err != nil || h.NextSequence != 54 || h.NextLine != 53 {
		t.Fatalf("repeat + new: head %+v err %v", h, err)
	}
	items, _ := readItems(t, s, store.ReadRequest{JobID: l.JobID, FromSequence: 1})
	if got := sequences(items); !slices.Equal(got, []int64{1, 2, 52}) {
		t.Fatalf("stored items at %v, want [1 2 52]", got)
	}
	if b := items[1].GetOutputBatch(); b.GetFirstLine() != 1 || items[1].GetAttempt() != 1 {
		t.Fatalf("stored batch: first_line %d attempt %d, want 1 and 1", b.GetFirstLine(), items[1].GetAttempt())
	}
	if fl := items[2].GetOutputBatch().GetFirstLine(); fl != 51 {
		t.Fatalf("second batch first_line %d, want 51", fl)
	}
	j := get(t, s, l.JobID)
	if j.GetLastSequence() != 53 || j.GetLineCount() != 52 {
		t.Fatalf("job says last_sequence %d line_count %d, want 53 and 52", j.GetLastSequence(), j.GetLineCount())
	}

	bad := map[string][]*spoolv1.JobEvent{
		"gap":                {batchEvent(60, "x")},
		"overlap":            {batchEvent(53, "x", "y")},
		"different content":  {batchEvent(52, "51")},
		"out of order":       {batchEvent(54, "a"), batchEvent(56, "b")},
		"too many lines":     {batchEvent(54, numbered(1, 51)...)},
		"too many bytes":     {batchEvent(54, string(make([]byte, 256<<10+1)))},
		"zero sequence":      {batchEvent(0, "x")},
		"wrong first_line":   {withFirstLine(batchEvent(54, "x"), 7)},
		"wrong attempt":      {withAttempt(startEvent(54), 2)},
		"type/data mismatch": {{Sequence: 54, Timestamp: ts(1), EventType: spoolv1.EventType_EVENT_TYPE_PROCESS_END}},
		"no timestamp":       {{Sequence: 54, EventType: spoolv1.EventType_EVENT_TYPE_PROCESS_START, EventData: &spoolv1.JobEvent_ProcessStart{ProcessStart: &spoolv1.ProcessStartEvent{}}}},
		"bad end_sequence":   {withEnd(batchEvent(54, "x", "y"), 56)},
		"no stream":          {noStream(batchEvent(54, "x"))},
	}
	for name, evs := range bad {
		_, err := s.Append(ctx, l.LeaseRef, events.Messages(evs...))
		wantErr(t, err, spool.ErrInvalidArgument, "append with "+name)
	}
	if j2 := get(t, s, l.JobID); j2.GetLastSequence() != 53 {
		t.Fatalf("refused appends changed the log: last_sequence %d", j2.GetLastSequence())
	}
}

// testAppendEncoded: events published encoded, with their attempt and line
// numbers filled in as a worker fills them, are stored byte for byte; one
// that leaves them to the server is numbered like a message; one whose
// numbers disagree with the log is refused; a repeat is a no-op.
func testAppendEncoded(t *testing.T, b Backend) {
	s := open(t, b)
	ctx := context.Background()
	l := runningJob(t, s, newJob(newQueue()))
	// Each event's fields are sent last first: a store that encoded the
	// event again would write them in order, so bytes kept as sent show.
	sentBody := func(ev *spoolv1.JobEvent) []byte {
		raw, _ := proto.MarshalOptions{Deterministic: true}.Marshal(ev)
		var fields [][]byte
		for len(raw) > 0 {
			_, _, n := protowire.ConsumeField(raw)
			fields, raw = append(fields, raw[:n]), raw[n:]
		}
		slices.Reverse(fields)
		return bytes.Join(fields, nil)
	}
	encode := func(ev *spoolv1.JobEvent) events.Published {
		t.Helper()
		p, err := events.ParseEncoded(append([]byte{0}, sentBody(ev)...))
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	start := withAttempt(startEvent(1), 1)
	complete := withAttempt(withFirstLine(batchEvent(2, numbered(1, 50)...), 1), 1)
	sent := []events.Published{encode(start), encode(complete)}
	h, err := s.Append(ctx, l.LeaseRef, sent)
	if err != nil || h != (store.Head{NextSequence: 52, NextLine: 51}) {
		t.Fatalf("append encoded: head %+v, %v", h, err)
	}
	if h2, err := s.Append(ctx, l.LeaseRef, sent); err != nil || h2 != h {
		t.Fatalf("re-sent encoded events: head %+v, %v", h2, err)
	}
	unnumbered := encode(batchEvent(52, "51", "52"))
	if h, err = s.Append(ctx, l.LeaseRef, []events.Published{unnumbered}); err != nil || h.NextLine != 53 {
		t.Fatalf("append encoded without line numbers: head %+v, %v", h, err)
	}
	for name, ev := range map[string]*spoolv1.JobEvent{
		"a first_line the log is not at": withAttempt(withFirstLine(batchEvent(54, "x"), 60), 1),
		"another attempt":                withAttempt(withFirstLine(batchEvent(54, "x"), 53), 2),
		"a gap":                          withAttempt(withFirstLine(batchEvent(55, "x"), 53), 1),
	} {
		_, err := s.Append(ctx, l.LeaseRef, []events.Published{encode(ev)})
		wantErr(t, err, spool.ErrInvalidArgument, "append encoded with "+name)
	}
	var stored []*events.Stored
	for st, err := range s.ReadStored(ctx, store.ReadRequest{JobID: l.JobID, FromSequence: 1}) {
		if err != nil {
			t.Fatal(err)
		}
		stored = append(stored, st)
	}
	if len(stored) != 3 {
		t.Fatalf("%d items stored, want 3", len(stored))
	}
	for i, ev := range []*spoolv1.JobEvent{start, complete} {
		if raw := stored[i].Proto(); raw != nil && !bytes.Equal(raw, sentBody(ev)) {
			t.Fatalf("item %d was not stored as sent", i)
		}
		if got, err := stored[i].Event(); err != nil || !proto.Equal(got, ev) {
			t.Fatalf("item %d reads back as %v, %v", i, got, err)
		}
	}
	if got, _ := stored[2].Event(); got.GetOutputBatch().GetFirstLine() != 51 || got.GetAttempt() != 1 {
		t.Fatalf("unnumbered batch stored with first_line %d attempt %d, want 51 and 1", got.GetOutputBatch().GetFirstLine(), got.GetAttempt())
	}
}

func withFirstLine(ev *spoolv1.JobEvent, n int64) *spoolv1.JobEvent {
	ev.GetOutputBatch().FirstLine = n
	return ev
}

func withAttempt(ev *spoolv1.JobEvent, a int32) *spoolv1.JobEvent {
	ev.Attempt = a
	return ev
}

func withEnd(ev *spoolv1.JobEvent, end int64) *spoolv1.JobEvent {
	ev.GetOutputBatch().EndSequence = end
	return ev
}

func noStream(ev *spoolv1.JobEvent) *spoolv1.JobEvent {
	ev.GetOutputBatch().Outputs[0].Stream = spoolv1.StreamType_STREAM_TYPE_UNSPECIFIED
	return ev
}

// testReadSeek: `seq 1 10000` as a job; line N is "N"; a read from line
// 9000 (or its sequence) fetches only the batches from the one holding it.
func testReadSeek(t *testing.T, b Backend) {
	s := open(t, b)
	l := seqJob(t, s, newQueue(), 10000, 50)
	j := get(t, s, l.JobID)
	if j.GetLineCount() != 10000 || j.GetLastSequence() != 10002 {
		t.Fatalf("job: %d lines, last sequence %d; want 10000 and 10002", j.GetLineCount(), j.GetLastSequence())
	}

	all := feedAll(t, s, storekit.FeedRequest{JobID: l.JobID})
	wantContiguous(t, all, 1, 10002)
	for _, ev := range all[1:10001] {
		d := ev.GetOutputData()
		if want := strconv.FormatInt(d.GetLineNumber(), 10); string(d.GetOutput()) != want || ev.GetSequence() != d.GetLineNumber()+1 {
			t.Fatalf("sequence %d: line %d is %q, want %q", ev.GetSequence(), d.GetLineNumber(), d.GetOutput(), want)
		}
	}

	// 200 batches of 50: line 9000 ends batch 180 (lines 8951-9000); from
	// there, that batch, 20 more, and PROCESS_END: 22 items.
	for name, r := range map[string]store.ReadRequest{
		"line 9000":     {JobID: l.JobID, FromLine: 9000},
		"sequence 9001": {JobID: l.JobID, FromSequence: 9001},
	} {
		items, read := readItems(t, s, r)
		if len(items) != 22 || read > 23 {
			t.Fatalf("from %s: yielded %d items and fetched %d; want 22 (and at most one extra fetch to seek)", name, len(items), read)
		}
		if fl := items[0].GetOutputBatch().GetFirstLine(); fl != 8951 {
			t.Fatalf("from %s: first item starts at line %d, want the batch holding 9000 (8951)", name, fl)
		}
	}
	fromLine := feedAll(t, s, storekit.FeedRequest{JobID: l.JobID, FromLine: 9000})
	if first := fromLine[0].GetOutputData(); first.GetLineNumber() != 9000 || string(first.GetOutput()) != "9000" {
		t.Fatalf("from line 9000 the first line is %d %q", first.GetLineNumber(), first.GetOutput())
	}
	wantContiguous(t, fromLine, 9001, 10002)

	// A line past the end yields what follows the last line (PROCESS_END).
	tail := feedAll(t, s, storekit.FeedRequest{JobID: l.JobID, FromLine: 10001})
	if len(tail) != 1 || tail[0].GetEventType() != spoolv1.EventType_EVENT_TYPE_PROCESS_END {
		t.Fatalf("from line 10001: %v, want only PROCESS_END", sequences(tail))
	}
	if none := feedAll(t, s, storekit.FeedRequest{JobID: l.JobID, FromLine: 20000}); len(none) != 0 {
		t.Fatalf("from line 20000: %d events, want none", len(none))
	}
	// Limit caps the items.
	if items, _ := readItems(t, s, store.ReadRequest{JobID: l.JobID, FromSequence: 1, Limit: 3}); len(items) != 3 {
		t.Fatalf("Limit 3 yielded %d items", len(items))
	}
	// Unknown jobs have empty logs at the store level.
	if items, _ := readItems(t, s, store.ReadRequest{JobID: "no-such-job", FromSequence: 1}); len(items) != 0 {
		t.Fatalf("unknown job has %d items", len(items))
	}
}

// boundaryJob stores outputs 1..150 in batches of the given sizes, starting
// at sequence 1 (no PROCESS_START), so sequences and line numbers match.
func boundaryJob(t *testing.T, s store.JobStore, sizes ...int) string {
	t.Helper()
	l := runningJob(t, s, newJob(newQueue()))
	var evs []*spoolv1.JobEvent
	seq := 1
	for _, n := range sizes {
		evs = append(evs, batchEvent(int64(seq), numbered(seq, seq+n-1)...))
		seq += n
	}
	appendAll(t, s, l.LeaseRef, evs)
	return l.JobID
}

// testReadFromBatchBoundaries reads from the first, a middle and the last
// sequence of batches. The batch-floor formula alone would fetch the batch
// before an exact batch start and discard it; stores seek exactly, so they
// fetch no batch they do not need.
func testReadFromBatchBoundaries(t *testing.T, b Backend) {
	s := open(t, b)
	id := boundaryJob(t, s, 50, 50, 50)
	cases := []struct {
		name        string
		from        int64
		wantBatches []int64
		wantEvents  int
	}{
		{"exact batch start", 51, []int64{51, 101}, 100},
		{"mid-batch", 75, []int64{51, 101}, 76},
		{"near end", 145, []int64{101}, 6},
	}
	for _, c := range cases {
		items, read := readItems(t, s, store.ReadRequest{JobID: id, FromSequence: c.from})
		if got := sequences(items); !slices.Equal(got, c.wantBatches) || read > len(c.wantBatches)+1 {
			t.Fatalf("%s (from %d): batches %v (fetched %d), want %v", c.name, c.from, got, read, c.wantBatches)
		}
		evs := feedAll(t, s, storekit.FeedRequest{JobID: id, FromSequence: c.from})
		if len(evs) != c.wantEvents {
			t.Fatalf("%s: %d events, want %d", c.name, len(evs), c.wantEvents)
		}
		wantContiguous(t, evs, c.from, 150)
	}
}

// testReadVariableSizes: batches flushed at 30, 45,
// 50 and 25 lines; reading from 100 returns the batches at 76 and 126.
func testReadVariableSizes(t *testing.T, b Backend) {
	s := open(t, b)
	id := boundaryJob(t, s, 30, 45, 50, 25)
	items, _ := readItems(t, s, store.ReadRequest{JobID: id, FromSequence: 100})
	if got := sequences(items); !slices.Equal(got, []int64{76, 126}) {
		t.Fatalf("batches %v, want [76 126]", got)
	}
	evs := feedAll(t, s, storekit.FeedRequest{JobID: id, FromSequence: 100})
	if len(evs) != 51 || evs[0].GetSequence() != 100 || evs[50].GetSequence() != 150 {
		t.Fatalf("%d events from %d to %d, want 51 from 100 to 150", len(evs), evs[0].GetSequence(), evs[len(evs)-1].GetSequence())
	}
}

// testReadInterleaved: batches interleaved with
// critical events, read from sequence 50.
func testReadInterleaved(t *testing.T, b Backend) {
	s := open(t, b)
	l := runningJob(t, s, newJob(newQueue()))
	appendAll(t, s, l.LeaseRef, []*spoolv1.JobEvent{
		startEvent(1),
		batchEvent(2, numbered(1, 50)...),
		batchEvent(52, numbered(51, 100)...),
		errorEvent(102, "test error"),
		batchEvent(103, numbered(101, 150)...),
		endEvent(153, 1),
	})
	evs := feedAll(t, s, storekit.FeedRequest{JobID: l.JobID, FromSequence: 50})
	wantContiguous(t, evs, 50, 153)
	if evs[0].GetEventType() != spoolv1.EventType_EVENT_TYPE_OUTPUT_DATA || evs[2].GetSequence() != 52 {
		t.Fatalf("first events: %v", evs[:3])
	}
	if e := evs[52]; e.GetSequence() != 102 || e.GetEventType() != spoolv1.EventType_EVENT_TYPE_PROCESS_ERROR || e.GetProcessError().GetMessage() != "test error" {
		t.Fatalf("event 52 is %v, want PROCESS_ERROR at 102", e)
	}
	// Line numbers skip the critical event: line 101 is sequence 103.
	if d := evs[53].GetOutputData(); evs[53].GetSequence() != 103 || d.GetLineNumber() != 101 {
		t.Fatalf("after the error: sequence %d line %d, want 103 and line 101", evs[53].GetSequence(), d.GetLineNumber())
	}
}

// testReadStored: ReadStored yields the items Read yields, each with the
// header of its event and, when it carries its stored bytes, bytes that
// decode to it; a feed cuts a batch it starts inside, and the part it
// yields carries no stored bytes.
func testReadStored(t *testing.T, b Backend) {
	s := open(t, b)
	l := runningJob(t, s, newJob(newQueue()))
	appendAll(t, s, l.LeaseRef, []*spoolv1.JobEvent{
		startEvent(1),
		batchEvent(2, numbered(1, 50)...),
		errorEvent(52, "test error"),
		batchEvent(53, numbered(51, 100)...),
		endEvent(103, 1),
	})
	ctx := context.Background()
	for _, r := range []store.ReadRequest{
		{JobID: l.JobID, FromSequence: 1},
		{JobID: l.JobID, FromSequence: 60},
		{JobID: l.JobID, FromLine: 75, Limit: 1},
	} {
		want, _ := readItems(t, s, r)
		var got []*events.Stored
		for st, err := range s.ReadStored(ctx, r) {
			if err != nil {
				t.Fatalf("ReadStored: %v", err)
			}
			got = append(got, st)
		}
		if len(got) != len(want) {
			t.Fatalf("from %d, line %d: ReadStored yields %d items, Read %d", r.FromSequence, r.FromLine, len(got), len(want))
		}
		for i, st := range got {
			ev, err := st.Event()
			if err != nil || !proto.Equal(ev, want[i]) || st.Header != events.HeaderOf(want[i]) {
				t.Fatalf("item %d: %+v (%v), Read yields %v", i, st.Header, err, want[i])
			}
			if raw := st.Proto(); raw != nil {
				dec := &spoolv1.JobEvent{}
				if err := proto.Unmarshal(raw, dec); err != nil || !proto.Equal(dec, want[i]) {
					t.Fatalf("item %d: stored bytes decode to %v (%v), want %v", i, dec, err, want[i])
				}
			}
		}
	}
	var fed []*events.Stored
	for st, err := range storekit.NewFeed(s, storekit.FeedRequest{JobID: l.JobID, FromSequence: 30}).Stored(ctx) {
		if err != nil {
			t.Fatalf("feed: %v", err)
		}
		fed = append(fed, st)
	}
	if len(fed) != 4 || fed[0].Proto() != nil || fed[0].Sequence != 30 || fed[0].LineCount != 22 || fed[1].Sequence != 52 {
		t.Fatalf("feed from inside the first batch: %d items, the first %+v", len(fed), fed[0].Header)
	}
}

// testNewAttemptContinues: a redelivered job's attempt 2 continues the log
// after attempt 1's output; attempt 1's late publishes are refused.
func testNewAttemptContinues(t *testing.T, b Backend) {
	s := open(t, b)
	ctx := context.Background()
	q := newQueue()
	enqueue(t, s, newJob(q))
	l1 := leaseOne(t, s, q, shortLease)
	appendAll(t, s, l1.LeaseRef, []*spoolv1.JobEvent{startEvent(1), batchEvent(2, "a1", "a2", "a3")})
	runOut(l1)
	if _, err := s.ExpireLeases(ctx, Sweep); err != nil {
		t.Fatal(err)
	}
	l2 := leaseOne(t, s, q, time.Minute)
	if l2.Attempt != 2 || l2.Head != (store.Head{NextSequence: 5, NextLine: 4}) {
		t.Fatalf("attempt %d starts at %+v, want attempt 2 at sequence 5 line 4", l2.Attempt, l2.Head)
	}
	_, err := s.Append(ctx, l1.LeaseRef, events.Messages(batchEvent(5, "late")))
	wantErr(t, err, spool.ErrStaleLease, "attempt 1 publishing after redelivery")
	appendAll(t, s, l2.LeaseRef, []*spoolv1.JobEvent{startEvent(5), batchEvent(6, "b1", "b2"), endEvent(8, 0)})
	if _, err := s.Complete(ctx, l2.LeaseRef, &spoolv1.JobResult{}); err != nil {
		t.Fatal(err)
	}
	_, err = s.Complete(ctx, l1.LeaseRef, &spoolv1.JobResult{})
	wantErr(t, err, spool.ErrStaleLease, "attempt 1 completing after attempt 2")

	evs := feedAll(t, s, storekit.FeedRequest{JobID: l1.JobID})
	wantContiguous(t, evs, 1, 8)
	type row struct {
		attempt int32
		typ     spoolv1.EventType
		line    int64
		text    string
	}
	var got []row
	for _, ev := range evs {
		got = append(got, row{ev.GetAttempt(), ev.GetEventType(), ev.GetOutputData().GetLineNumber(), string(ev.GetOutputData().GetOutput())})
	}
	out, start, end := spoolv1.EventType_EVENT_TYPE_OUTPUT_DATA, spoolv1.EventType_EVENT_TYPE_PROCESS_START, spoolv1.EventType_EVENT_TYPE_PROCESS_END
	want := []row{{1, start, 0, ""}, {1, out, 1, "a1"}, {1, out, 2, "a2"}, {1, out, 3, "a3"},
		{2, start, 0, ""}, {2, out, 4, "b1"}, {2, out, 5, "b2"}, {2, end, 0, ""}}
	if !slices.Equal(got, want) {
		t.Fatalf("log of a redelivered job:\n%v\nwant\n%v", got, want)
	}
}
