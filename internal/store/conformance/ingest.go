package conformance

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/spool-run/spool"
	spoolv1 "github.com/spool-run/spool/gen/spool/v1"
	"github.com/spool-run/spool/internal/events"
	"github.com/spool-run/spool/internal/store"
	"github.com/spool-run/spool/internal/store/storekit"
)

// newSource returns a source name no other test uses.
func newSource() string { return "group/" + newQueue() + ":stream" }

// externalJob is the job Ingest creates for src.
func externalJob(src string) store.NewJob {
	return store.NewJob{
		Queue:       "external",
		Params:      &spoolv1.JobParams{External: &spoolv1.External{Source: src}},
		Execution:   defaultExec(),
		MaxAttempts: 1,
	}
}

// rawEvents are events "<prefix>-<i>" for i in ids, each with the message
// "line <i>" and a time of i ms after the suite's epoch.
func rawEvents(prefix string, ids ...int) []store.RawEvent {
	out := make([]store.RawEvent, len(ids))
	for k, i := range ids {
		out[k] = store.RawEvent{ID: fmt.Sprintf("%s-%d", prefix, i), Time: time.UnixMilli(epochMs + int64(i)).UTC(), Message: fmt.Sprintf("line %d", i)}
	}
	return out
}

func span(from, to int) []int {
	out := make([]int, 0, to-from+1)
	for i := from; i <= to; i++ {
		out = append(out, i)
	}
	return out
}

func ingest(t *testing.T, s store.JobStore, src string, evs []store.RawEvent) store.IngestResult {
	t.Helper()
	return ingestJob(t, s, externalJob(src), evs)
}

func ingestJob(t *testing.T, s store.JobStore, nj store.NewJob, evs []store.RawEvent) store.IngestResult {
	t.Helper()
	res, err := s.Ingest(context.Background(), store.IngestRequest{Source: nj.Params.GetExternal().GetSource(), Events: evs, Job: nj})
	if err != nil {
		t.Fatalf("Ingest of %d events: %v", len(evs), err)
	}
	return res
}

// lineTexts replays a job's whole log and returns its lines' texts, checking
// they are numbered from 1 without a gap.
func lineTexts(t *testing.T, s store.JobStore, jobID string) []string {
	t.Helper()
	var out []string
	for i, ev := range feedAll(t, s, storekit.FeedRequest{JobID: jobID}) {
		d := ev.GetOutputData()
		if d == nil {
			t.Fatalf("event %d of an external log is %s, want output", i, ev.GetEventType())
		}
		if d.GetLineNumber() != int64(i+1) {
			t.Fatalf("line %d is numbered %d", i+1, d.GetLineNumber())
		}
		out = append(out, string(d.GetOutput()))
	}
	return out
}

func messages(ids ...int) []string {
	out := make([]string, len(ids))
	for k, i := range ids {
		out[k] = fmt.Sprintf("line %d", i)
	}
	return out
}

func wantLines(t *testing.T, got, want []string) {
	t.Helper()
	if !slices.Equal(got, want) {
		t.Fatalf("log holds %d lines %q\nwant %d lines %q", len(got), clip(got), len(want), clip(want))
	}
}

// clip keeps a failure message readable.
func clip(s []string) []string {
	if len(s) > 12 {
		return append(slices.Clip(s[:12]), "…")
	}
	return s
}

// testIngestCreatesExternalJob: the first events of a source make a job of
// its own, running attempt 1 under the external lease with no expiry, whose
// lines are the messages in the order given, at the events' times.
func testIngestCreatesExternalJob(t *testing.T, b Backend) {
	s := open(t, b)
	src := newSource()
	res := ingest(t, s, src, rawEvents("e", 3, 1, 2))
	if !res.Created || res.Accepted != 3 || res.Job == nil {
		t.Fatalf("first ingest: created=%v accepted=%d job=%v; want a new job with 3 events", res.Created, res.Accepted, res.Job)
	}
	j := get(t, s, res.Job.GetJobId())
	wantState(t, j, spoolv1.JobState_JOB_STATE_RUNNING)
	if j.GetAttempt() != 1 || j.GetParams().GetExternal().GetSource() != src || j.GetQueue() != "external" || j.GetLineCount() != 3 {
		t.Fatalf("external job looks wrong: %v", j)
	}
	if j.GetLeaseExpiresAt() != nil {
		t.Fatalf("an external job's lease has an expiry (%v); it must have none", j.GetLeaseExpiresAt().AsTime())
	}
	if !proto.Equal(res.Job, j) {
		t.Fatalf("Ingest returned\n%v\nGet returns\n%v", res.Job, j)
	}
	wantLines(t, lineTexts(t, s, j.GetJobId()), messages(3, 1, 2))
	for i, ev := range feedAll(t, s, storekit.FeedRequest{JobID: j.GetJobId()}) {
		want := time.UnixMilli(epochMs + int64([]int{3, 1, 2}[i]))
		if got := ev.GetTimestamp().AsTime(); !got.Equal(want) {
			t.Fatalf("line %d has time %v, want the event's %v", i+1, got, want)
		}
	}
	var acc []store.Accepted
	for a, err := range s.Accepted(context.Background(), j.GetJobId()) {
		if err != nil {
			t.Fatal(err)
		}
		acc = append(acc, a)
	}
	want := rawEvents("e", 3, 1, 2)
	if len(acc) != 3 {
		t.Fatalf("Accepted yields %d events, want 3", len(acc))
	}
	for i, a := range acc {
		if a.ID != want[i].ID || a.Message != want[i].Message || !a.Time.Equal(want[i].Time) || a.Line != int64(i+1) || a.Lines != 1 || a.Group != 1 {
			t.Fatalf("accepted event %d is %+v, want %+v on line %d of group 1", i, a, want[i], i+1)
		}
	}
}

// testIngestDeduplicates: a delivery repeated changes nothing; one that
// mixes old and new events adds the new ones only, in the order they came.
func testIngestDeduplicates(t *testing.T, b Backend) {
	s := open(t, b)
	src := newSource()
	first := ingest(t, s, src, rawEvents("e", 1, 2, 3))
	again := ingest(t, s, src, rawEvents("e", 1, 2, 3))
	if again.Created || again.Accepted != 0 || again.Job.GetJobId() != first.Job.GetJobId() || again.Job.GetLastSequence() != first.Job.GetLastSequence() {
		t.Fatalf("repeated delivery: created=%v accepted=%d job %v; want nothing changed", again.Created, again.Accepted, again.Job)
	}
	mixed := ingest(t, s, src, rawEvents("e", 5, 2, 4, 1))
	if mixed.Accepted != 2 || mixed.Job.GetLineCount() != 5 {
		t.Fatalf("mixed delivery: accepted %d, %d lines; want 2 accepted, 5 lines", mixed.Accepted, mixed.Job.GetLineCount())
	}
	wantLines(t, lineTexts(t, s, first.Job.GetJobId()), messages(1, 2, 3, 5, 4))
	// A request whose job would be of another source, or of none, is
	// refused: its events and its job would never find each other.
	_, err := s.Ingest(context.Background(), store.IngestRequest{Source: src, Events: rawEvents("e", 9), Job: externalJob("elsewhere")})
	wantErr(t, err, spool.ErrInvalidArgument, "Ingest with a job of another source")
	_, err = s.Ingest(context.Background(), store.IngestRequest{Events: rawEvents("e", 9), Job: externalJob("")})
	wantErr(t, err, spool.ErrInvalidArgument, "Ingest with no source")
	// The same ids from another source are other events.
	other := ingest(t, s, newSource(), rawEvents("e", 1, 2))
	if !other.Created || other.Accepted != 2 || other.Job.GetJobId() == first.Job.GetJobId() {
		t.Fatalf("another source with the same ids: %+v; want a job of its own with both events", other)
	}
}

// testIngestLayout: a message with newlines makes a line per part, one
// longer than max_batch_bytes is cut into partial pieces, and the lines of
// a call fill batches of max_batch_size.
func testIngestLayout(t *testing.T, b Backend) {
	s := open(t, b)
	nj := externalJob(newSource())
	nj.Execution.Batching.MaxBatchSize = 4
	nj.Execution.Batching.MaxBatchBytes = 10
	res := ingestJob(t, s, nj, []store.RawEvent{
		{ID: "a", Time: time.UnixMilli(epochMs), Message: "one\ntwo\n\nfour"},
		{ID: "b", Time: time.UnixMilli(epochMs + 1), Message: "0123456789abcdefghijéé"},
		{ID: "c", Time: time.UnixMilli(epochMs + 2), Message: ""},
	})
	id := res.Job.GetJobId()
	// "0123456789abcdefghijéé": 10 bytes, 10 bytes, then "éé" (4 bytes).
	wantLines(t, lineTexts(t, s, id), []string{"one", "two", "", "four", "0123456789", "abcdefghij", "éé", ""})
	partial := []bool{false, false, false, false, true, true, false, false}
	for i, ev := range feedAll(t, s, storekit.FeedRequest{JobID: id}) {
		if ev.GetOutputData().GetPartial() != partial[i] {
			t.Fatalf("line %d partial=%v, want %v", i+1, ev.GetOutputData().GetPartial(), partial[i])
		}
	}
	items, _ := readItems(t, s, store.ReadRequest{JobID: id, FromSequence: 1})
	if got := len(items); got != 4 {
		t.Fatalf("8 lines of at most 10 bytes in batches of 4 lines and 10 bytes made %d items, want 4", got)
	}
	var acc []store.Accepted
	for a, err := range s.Accepted(context.Background(), id) {
		if err != nil {
			t.Fatal(err)
		}
		acc = append(acc, a)
	}
	if len(acc) != 3 || acc[0].Lines != 4 || acc[1].Line != 5 || acc[1].Lines != 3 || acc[2].Line != 8 || acc[2].Lines != 1 {
		t.Fatalf("accepted events %+v: want lines 1-4, 5-7 and 8", acc)
	}
}

// testIngestBatches: 1,000 events in one call are 20 stored items at 50
// lines a batch; calls of 7 events make an item (or two) each.
func testIngestBatches(t *testing.T, b Backend) {
	s := open(t, b)
	res := ingest(t, s, newSource(), rawEvents("e", span(1, 1000)...))
	items, _ := readItems(t, s, store.ReadRequest{JobID: res.Job.GetJobId(), FromSequence: 1})
	if len(items) != 20 {
		t.Fatalf("1,000 events in one call made %d items, want 20", len(items))
	}
	src := newSource()
	var last store.IngestResult
	for from := 1; from <= 70; from += 7 {
		last = ingest(t, s, src, rawEvents("e", span(from, from+6)...))
	}
	items, _ = readItems(t, s, store.ReadRequest{JobID: last.Job.GetJobId(), FromSequence: 1})
	if len(items) != 10 {
		t.Fatalf("10 calls of 7 events made %d items, want 10", len(items))
	}
	wantLines(t, lineTexts(t, s, last.Job.GetJobId()), messages(span(1, 70)...))
}

// testIngestRace: servers ingesting one source at once, each delivering the
// same events in its own order and cut, make one job holding every event
// once.
func testIngestRace(t *testing.T, b Backend) {
	s := open(t, b)
	ingestRace(t, []store.JobStore{s, s, s, s, s, s})
}

// ingestRace runs one deliverer per store over the same 150 events.
func ingestRace(t *testing.T, stores []store.JobStore) {
	t.Helper()
	src := newSource()
	all := rawEvents("e", span(1, 150)...)
	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		accepted int
		jobs     = map[string]bool{}
	)
	start := make(chan struct{})
	for i, s := range stores {
		wg.Go(func() {
			r := rand.New(rand.NewPCG(uint64(i), 7))
			evs := slices.Clone(all)
			r.Shuffle(len(evs), func(a, b int) { evs[a], evs[b] = evs[b], evs[a] })
			<-start
			for len(evs) > 0 {
				n := min(len(evs), 1+r.IntN(40))
				res, err := s.Ingest(context.Background(), store.IngestRequest{Source: src, Events: evs[:n], Job: externalJob(src)})
				if err != nil {
					t.Errorf("Ingest: %v", err)
					return
				}
				mu.Lock()
				accepted += res.Accepted
				jobs[res.Job.GetJobId()] = true
				mu.Unlock()
				evs = evs[n:]
			}
		})
	}
	close(start)
	wg.Wait()
	if t.Failed() {
		return
	}
	if len(jobs) != 1 || accepted != len(all) {
		t.Fatalf("%d deliverers of one source made %d jobs and accepted %d events; want 1 job and %d events", len(stores), len(jobs), accepted, len(all))
	}
	var id string
	for id = range jobs {
	}
	got := lineTexts(t, stores[0], id)
	slices.Sort(got)
	want := messages(span(1, 150)...)
	slices.Sort(want)
	wantLines(t, got, want)
}

// testIngestAfterEnd: an ended job takes no more events; new events of its
// source open a new job, while a delivery of old events only changes
// nothing. The external job is never leased, expired or listed as another
// source's.
func testIngestAfterEnd(t *testing.T, b Backend) {
	s := open(t, b)
	ctx := context.Background()
	src := newSource()
	first := ingest(t, s, src, rawEvents("e", 1, 2)).Job
	if n, err := s.ExpireLeases(ctx, Sweep); err != nil {
		t.Fatal(err)
	} else if j := get(t, s, first.GetJobId()); j.GetState() != spoolv1.JobState_JOB_STATE_RUNNING {
		t.Fatalf("ExpireLeases (%+v) touched an external job: %v", n, j)
	}
	if ls, err := s.Dequeue(ctx, store.DequeueRequest{Queue: first.GetQueue(), Max: 10, LeaseDuration: time.Minute}); err != nil || len(ls) != 0 {
		t.Fatalf("Dequeue of the external queue: %d leases, %v; want none", len(ls), err)
	}
	done, err := s.Complete(ctx, store.ExternalLeaseRef(first), &spoolv1.JobResult{})
	if err != nil {
		t.Fatal(err)
	}
	wantState(t, done, spoolv1.JobState_JOB_STATE_SUCCEEDED)
	old := ingest(t, s, src, rawEvents("e", 2, 1))
	if old.Created || old.Accepted != 0 {
		t.Fatalf("old events after the end: %+v; want nothing created or accepted", old)
	}
	second := ingest(t, s, src, rawEvents("e", 2, 3))
	if !second.Created || second.Accepted != 1 || second.Job.GetJobId() == first.GetJobId() {
		t.Fatalf("new events after the end: %+v; want a new job with the one new event", second)
	}
	wantLines(t, lineTexts(t, s, second.Job.GetJobId()), messages(3))
	wantLines(t, lineTexts(t, s, first.GetJobId()), messages(1, 2))
	// A normal job in the same queue, and another source's job.
	enqueue(t, s, newJob("external"))
	ingest(t, s, newSource(), rawEvents("e", 1))
	jobs, _, err := s.List(ctx, store.ListFilter{Source: src})
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, j := range jobs {
		ids = append(ids, j.GetJobId())
	}
	if want := []string{second.Job.GetJobId(), first.GetJobId()}; !slices.Equal(ids, want) {
		t.Fatalf("List by source: %v, want %v (newest first)", ids, want)
	}
	running, _, err := s.List(ctx, store.ListFilter{Source: src, States: []spoolv1.JobState{spoolv1.JobState_JOB_STATE_RUNNING}})
	if err != nil || len(running) != 1 || running[0].GetJobId() != second.Job.GetJobId() {
		t.Fatalf("List by source and state: %v, %v; want the open job", running, err)
	}
}

// testIngestWakesFollowers: a follower of an external job sees ingested
// lines live and ends when the job is completed.
func testIngestWakesFollowers(t *testing.T, b Backend) {
	s := open(t, b)
	src := newSource()
	job := ingest(t, s, src, rawEvents("e", 1)).Job
	f := follow(s, storekit.FeedRequest{JobID: job.GetJobId()}, 0)
	for i := 2; i <= 30; i++ {
		ingest(t, s, src, rawEvents("e", i))
	}
	if _, err := s.Complete(context.Background(), store.ExternalLeaseRef(job), &spoolv1.JobResult{}); err != nil {
		t.Fatal(err)
	}
	f.wait(t)
	wantContiguous(t, f.evs, 1, 30)
}

// testRebuildLog: the log rebuilt from the accepted events is the stored
// log, item for item; ReplaceLog puts a damaged log right again, and is
// refused for a job that is not external.
func testRebuildLog(t *testing.T, b Backend) {
	s := open(t, b)
	ctx := context.Background()
	src := newSource()
	var job *spoolv1.Job
	for from := 1; from <= 300; from += 37 {
		evs := rawEvents("e", span(from, min(from+36, 300))...)
		evs[0].Message += "\nsecond line\n" + strings.Repeat("x", 300<<10)
		job = ingest(t, s, src, evs).Job
	}
	id := job.GetJobId()
	stored, _ := readItems(t, s, store.ReadRequest{JobID: id, FromSequence: 1})
	rebuilt := rebuild(t, s, job)
	if len(rebuilt) != len(stored) {
		t.Fatalf("rebuilt %d items, the store holds %d", len(rebuilt), len(stored))
	}
	for i := range stored {
		if !proto.Equal(rebuilt[i], stored[i]) {
			t.Fatalf("rebuilt item %d differs from the stored one:\n%v\nstored:\n%v", i, short(rebuilt[i]), short(stored[i]))
		}
	}
	want := lineTexts(t, s, id)
	// Damage: the log loses its third item and its second says other things.
	damaged := slices.Clone(rebuilt)
	damaged = append(damaged[:2], damaged[3:]...)
	changed := proto.CloneOf(damaged[1])
	changed.GetOutputBatch().GetOutputs()[0].Output = []byte("not what was sent")
	damaged[1] = changed
	if err := s.ReplaceLog(ctx, id, damaged); err != nil {
		t.Fatal(err)
	}
	if got, _ := readItems(t, s, store.ReadRequest{JobID: id, FromSequence: 1}); len(got) != len(rebuilt)-1 || !proto.Equal(got[1], changed) {
		t.Fatalf("ReplaceLog with a damaged log: %d items read back, want %d with the damage", len(got), len(rebuilt)-1)
	}
	if err := s.ReplaceLog(ctx, id, rebuild(t, s, job)); err != nil {
		t.Fatal(err)
	}
	wantLines(t, lineTexts(t, s, id), want)
	if j := get(t, s, id); j.GetLastSequence() != job.GetLastSequence() || j.GetLineCount() != job.GetLineCount() {
		t.Fatalf("ReplaceLog moved the head: %d/%d, was %d/%d", j.GetLastSequence(), j.GetLineCount(), job.GetLastSequence(), job.GetLineCount())
	}
	normal := seqJob(t, s, newQueue(), 10, 5)
	wantErr(t, s.ReplaceLog(ctx, normal.JobID, rebuilt), spool.ErrInvalidArgument, "ReplaceLog of a job that is not external")
	for _, err := range s.Accepted(ctx, normal.JobID) {
		t.Fatalf("a job that is not external has accepted events (error: %v)", err)
	}
}

// rebuild lays the job's accepted events out again.
func rebuild(t *testing.T, s store.JobStore, job *spoolv1.Job) []*spoolv1.JobEvent {
	t.Helper()
	var acc []store.Accepted
	for a, err := range s.Accepted(context.Background(), job.GetJobId()) {
		if err != nil {
			t.Fatal(err)
		}
		acc = append(acc, a)
	}
	evs, err := storekit.RebuildEvents(job.GetExecutionConfig().GetBatching(), s.Limits(), acc)
	if err != nil {
		t.Fatal(err)
	}
	return evs
}

// short describes an item without its output.
func short(ev *spoolv1.JobEvent) string {
	return fmt.Sprintf("sequence %d-%d, first line %d, %d lines, %d bytes, attempt %d", ev.GetSequence(), events.EndSequence(ev),
		events.FirstLine(ev), events.LineCount(ev), events.OutputBytes(ev), ev.GetAttempt())
}

// testIngestPersistence: after a restart the source's open job takes more
// events, and the events it took before are still duplicates.
func testIngestPersistence(t *testing.T, b Backend) {
	before := b.Open(t)
	src := newSource()
	first := ingest(t, before, src, rawEvents("e", 1, 2, 3))
	after := b.Reopen(t, before)
	t.Cleanup(func() { _ = after.Close() })
	res := ingest(t, after, src, rawEvents("e", 3, 4, 1))
	if res.Created || res.Accepted != 1 || res.Job.GetJobId() != first.Job.GetJobId() {
		t.Fatalf("ingest after reopening: %+v; want the same job and only the new event", res)
	}
	wantLines(t, lineTexts(t, after, res.Job.GetJobId()), messages(1, 2, 3, 4))
}

// testSharedIngestRace: servers on one store ingesting one source at once
// make one job holding every event once.
func testSharedIngestRace(t *testing.T, a, b store.JobStore) {
	ingestRace(t, []store.JobStore{a, b, a, b})
}

// testGraceLeavesExternalJobs: the grace a server gives running jobs after
// an outage extends the leases of workers' jobs only; an external job has
// no lease to extend or to expire, before or after.
func testGraceLeavesExternalJobs(t *testing.T, b Backend) {
	s := open(t, b)
	ctx := context.Background()
	job := ingest(t, s, newSource(), rawEvents("e", 1)).Job
	runningJob(t, s, newJob(newQueue()))
	n, err := s.Capabilities().LeaseGracer.GraceLeases(ctx, time.Now().Add(time.Hour))
	if err != nil || n < 1 {
		t.Fatalf("GraceLeases extended %d leases (%v), want the worker's", n, err)
	}
	if _, err := s.ExpireLeases(ctx, Sweep); err != nil {
		t.Fatal(err)
	}
	j := get(t, s, job.GetJobId())
	if j.GetState() != spoolv1.JobState_JOB_STATE_RUNNING || j.GetLeaseExpiresAt() != nil {
		t.Fatalf("external job after grace and expiry: %v; want running with no lease expiry", j)
	}
}
