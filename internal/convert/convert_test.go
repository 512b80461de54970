package convert

import (
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/encoding/prototext"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/spool-run/spool"
	spoolv1 "github.com/spool-run/spool/gen/spool/v1"
)

func ts(sec int64) *timestamppb.Timestamp { return timestamppb.New(time.Unix(1_700_000_000+sec, 5)) }

// The enums of package spool number their values as the wire does, and
// name them as the wire does without its prefix: a value added to a .proto
// file fails here until package spool has it.
func TestEnumsMatchTheWire(t *testing.T) {
	check := func(kind string, names map[int32]string, prefix string, name func(int32) string) {
		t.Helper()
		for n, wire := range names {
			want := strings.ToLower(strings.TrimPrefix(wire, prefix))
			if got := name(n); got != want {
				t.Errorf("%s %d is %q in package spool, %q on the wire", kind, n, got, wire)
			}
		}
	}
	check("job state", spoolv1.JobState_name, "JOB_STATE_", func(n int32) string { return State(spoolv1.JobState(n)).String() })
	check("role", spoolv1.KeyRole_name, "KEY_ROLE_", func(n int32) string { return Role(spoolv1.KeyRole(n)).String() })
	check("overlap", spoolv1.Overlap_name, "OVERLAP_", func(n int32) string { return Overlap(spoolv1.Overlap(n)).String() })
	check("missed", spoolv1.Missed_name, "MISSED_", func(n int32) string {
		return strings.ReplaceAll(Missed(spoolv1.Missed(n)).String(), "-", "_")
	})
	check("scatter state", spoolv1.ScatterState_name, "SCATTER_STATE_", func(n int32) string { return ScatterState(spoolv1.ScatterState(n)).String() })
	check("stream", spoolv1.StreamType_name, "STREAM_TYPE_", func(n int32) string {
		if n == 0 {
			return "unspecified"
		}
		return Stream(spoolv1.StreamType(n)).String()
	})
	if len(spool.States()) != len(spoolv1.JobState_name)-1 || len(spool.Roles()) != len(spoolv1.KeyRole_name)-1 {
		t.Error("package spool lists a different number of states or roles than the wire")
	}
	for _, s := range spool.States() {
		if State(StateProto(s)) != s {
			t.Errorf("%v does not come back", s)
		}
	}
}

// Each event type a reader can ask for is a type of event on the wire, and
// an event of that type comes back as it.
func TestEventTypes(t *testing.T) {
	types := []spool.EventType{spool.EventOutput, spool.EventProcessStart, spool.EventProcessEnd, spool.EventProcessError}
	for i, wire := range EventTypesProto(types) {
		ev := &spoolv1.JobEvent{EventType: wire}
		if wire == spoolv1.EventType_EVENT_TYPE_UNSPECIFIED || eventType(ev) != types[i] {
			t.Errorf("%v goes as %v and comes back as %v", types[i], wire, eventType(ev))
		}
	}
	if got := EventTypesProto([]spool.EventType{0}); got[0] != spoolv1.EventType_EVENT_TYPE_UNSPECIFIED {
		t.Errorf("an unknown type goes as %v", got[0])
	}
}

// fullJob sets every field of a job.
func fullJob() *spoolv1.Job {
	return &spoolv1.Job{
		JobId: "j1", Queue: "q", State: spoolv1.JobState_JOB_STATE_CANCELLED,
		CreatedAt: ts(1), UpdatedAt: ts(2), StartedAt: ts(3), LeaseExpiresAt: ts(4), RunAfter: ts(5),
		Params: &spoolv1.JobParams{Argv: []string{"a", "b"}, Script: "s", Env: map[string]string{"K": "V"}, WorkingDir: "w",
			Timeout: durationpb.New(1500 * time.Millisecond), RepositoryUrl: "r", Ref: "ref", Stdin: []byte{0, 1}, Pty: true,
			StdinSize: 4 << 20, StdinSha256: "ab", StdinUpload: "up",
			SecretNames: []string{"S"}, Scatter: &spoolv1.ScatterMember{ScatterId: "sc", BatchIndex: 1, BatchCount: 2, ItemCount: 3, Gather: true},
			External: &spoolv1.External{Source: "src"},
			Batching: &spoolv1.JobBatching{FlushInterval: durationpb.New(1250 * time.Millisecond), MaxBatchSize: 10}, Artifacts: []string{"dist/**"}},
		ExecutionConfig: &spoolv1.ExecutionConfig{HeartbeatIntervalSeconds: 7,
			Batching: &spoolv1.BatchingConfig{FlushIntervalSeconds: 1, FlushIntervalMillis: 250, MaxBatchSize: 9, MaxBatchBytes: 1000, PlaybackIntervalMillis: 40}},
		RequestId: "rq", Attempt: 2, MaxAttempts: 5, CancelRequested: true,
		Result:       &spoolv1.JobResult{ExitCode: -1, Error: "e", StartedAt: ts(6), FinishedAt: ts(7), Attempt: 2, Output: `[1]`},
		LastSequence: 10, LineCount: 8, Retries: 3, RetriedAttempts: 1, ReleasedAttempts: 4, CancelReason: "c",
		Notes: []string{"n"}, RerunOf: "j0", Reruns: []string{"j2", "j3"},
		Priority: 1, After: []string{"a1", "a2"}, Followers: []string{"f1"}, Schedule: "nightly",
		Notify: []string{"https://example.com/hook"}, NotifyDue: ts(8),
		Deliveries: []*spoolv1.Delivery{{DeliveryId: "d1", Url: "https://example.com/hook", Try: 2, At: ts(9), Status: 500,
			Error: "500 Internal Server Error", Took: durationpb.New(30 * time.Millisecond), Delivered: true, GivenUp: true}},
	}
}

// A job, a scatter, its batches, a queue and a key come back from a round
// trip exactly as they were: nothing the wire carries is lost on the way.
func TestRoundTrip(t *testing.T) {
	count, pct := int32(2), float32(0.1)
	sc := &spoolv1.Scatter{
		ScatterId: "sc", State: spoolv1.ScatterState_SCATTER_STATE_FAILED, CreatedAt: ts(1), UpdatedAt: ts(2), GatherJobId: "sc.gather", Error: "e", FailedJobIds: []string{"sc.1"}, RedriveCount: 2,
		Progress: &spoolv1.ScatterProgress{BatchCount: 9, Waiting: 1, Queued: 2, Running: 3, Succeeded: 1, Failed: 1, Cancelled: 1, ItemCount: 90, ItemsDone: 10},
		Spec: &spoolv1.ScatterSpec{Queue: "q", Params: fullJob().GetParams(), MaxAttempts: 2, Retries: 1, BatchInput: `{"a":1}`,
			MaxConcurrency: 4, ToleratedFailureCount: &count, ToleratedFailurePercentage: &pct, Gather: fullJob().GetParams(),
			Source:  &spoolv1.ScatterSource{Items: "s3://b/k.csv", ItemsPrefix: "s3://b/p/", Format: "csv", MaxItemsPerBatch: 5, MaxBytesPerBatch: 1000, GroupBy: "g", MaxItemsPerGroup: 2},
			Results: "s3://b/out/"},
		Reading:        &spoolv1.ScatterReading{Done: true, ItemsRead: 90, BytesRead: 900, Reader: "r", ReaderUntil: ts(3), Etag: `"e"`},
		ResultManifest: "s3://b/out/sc/manifest.json",
	}
	batches := []*spoolv1.ScatterBatch{{BatchIndex: 0, ItemCount: 3, Job: fullJob()}, {BatchIndex: 1, ItemCount: 2}}
	q := &spoolv1.Queue{Name: "q", Paused: true, PausedAt: ts(1), Scheduled: 7, MaxRunning: 8, Queued: 1, Running: 2, Succeeded: 3, Failed: 4, Cancelled: 5, OldestQueuedAt: ts(2), Workers: 6,
		EndedPerMinute: []*spoolv1.EndedMinute{{Minute: ts(60), Succeeded: 3, Failed: 1, Cancelled: 2}, {Minute: ts(120)}}}
	k := &spoolv1.Key{Name: "k", Role: spoolv1.KeyRole_KEY_ROLE_WORKER, Queues: []string{"q"}, CreatedAt: ts(1), LastUsedAt: ts(2), RevokedAt: ts(3)}
	pairs := []struct {
		name      string
		in, out   proto.Message
		populated bool
	}{
		{"job", fullJob(), JobProto(Job(fullJob())), true},
		{"job without anything", &spoolv1.Job{JobId: "j"}, JobProto(Job(&spoolv1.Job{JobId: "j"})), false},
		{"scatter", sc, ScatterProto(Scatter(sc)), true},
		{"queue", q, QueueProto(Queue(q)), true},
		{"key", k, KeyProto(Key(k)), true},
		{"schedule", fullSchedule(), ScheduleProto(Schedule(fullSchedule())), false},
	}
	for _, p := range pairs {
		if !proto.Equal(p.in, p.out) {
			t.Errorf("%s changed on a round trip:\nsent %s\nback %s", p.name, prototext.Format(p.in), prototext.Format(p.out))
		}
		if p.populated {
			assertPopulated(t, p.name, p.in.ProtoReflect())
		}
	}
	back := ScatterBatchesProto(ScatterBatches(batches))
	for i := range batches {
		if !proto.Equal(batches[i], back[i]) {
			t.Errorf("batch %d changed on a round trip:\nsent %s\nback %s", i, prototext.Format(batches[i]), prototext.Format(back[i]))
		}
	}
}

// fullSchedule sets every field of a schedule, and of its job template
// what a tick uses.
func fullSchedule() *spoolv1.Schedule {
	return &spoolv1.Schedule{
		Name: "nightly", Cron: "0 3 * * *", Timezone: "Europe/Paris",
		Job: &spoolv1.EnqueueJobRequest{Queue: "q", Params: fullJob().GetParams(), Priority: 3, Retries: 2, MaxAttempts: 4,
			Notify: []string{"https://example.com/hook"}},
		Overlap: spoolv1.Overlap_OVERLAP_SKIP, Missed: spoolv1.Missed_MISSED_SKIP, Paused: true,
		CreatedAt: ts(1), UpdatedAt: ts(2), LastTickAt: ts(3), LastJobId: "j9", NextTickAt: ts(4), Revision: 5,
	}
}

// Every field of a schedule is converted, its job template apart (the
// round trip compares what of it a tick uses).
func TestSchedulePopulated(t *testing.T) {
	m := fullSchedule().ProtoReflect()
	fields := m.Descriptor().Fields()
	for i := range fields.Len() {
		if fd := fields.Get(i); !m.Has(fd) {
			t.Errorf("the schedule fixture leaves %s unset", fd.FullName())
		}
	}
	if Schedule(nil) != nil || ScheduleProto(nil) != nil {
		t.Fatal("a nil schedule does not stay nil")
	}
}

// A nil message converts to nil, a zero value to an unset message.
func TestNil(t *testing.T) {
	if Job(nil) != nil || Scatter(nil) != nil || Queue(nil) != nil || Key(nil) != nil || Event(nil) != nil ||
		JobProto(nil) != nil || ScatterProto(nil) != nil || QueueProto(nil) != nil || KeyProto(nil) != nil {
		t.Fatal("nil does not stay nil")
	}
	j := Job(&spoolv1.Job{})
	if !j.CreatedAt.IsZero() || j.Result != nil || j.Params.Timeout != 0 || j.Params.Scatter != nil {
		t.Fatalf("an empty job converts to %+v", j)
	}
}

// assertPopulated fails for a field of m (or of a message in it) left
// unset: a fixture that misses a field would let a conversion that drops
// it pass.
func assertPopulated(t *testing.T, name string, m protoreflect.Message) {
	t.Helper()
	fields := m.Descriptor().Fields()
	for i := range fields.Len() {
		fd := fields.Get(i)
		if !m.Has(fd) {
			t.Errorf("the %s fixture leaves %s unset", name, fd.FullName())
			continue
		}
		if fd.Message() != nil && !fd.IsList() && !fd.IsMap() {
			assertPopulated(t, name, m.Get(fd).Message())
		}
	}
}

// TestFlushInterval: an interval of whole seconds is written in seconds
// alone; one under or between seconds also in milliseconds, with the
// seconds rounded up for workers that read only them; and read back as
// given.
func TestFlushInterval(t *testing.T) {
	for _, tc := range []struct {
		d           time.Duration
		secs, milli int32
	}{
		{0, 0, 0},
		{3 * time.Second, 3, 0},
		{200 * time.Millisecond, 1, 200},
		{1500 * time.Millisecond, 2, 1500},
	} {
		b := &spoolv1.BatchingConfig{}
		SetFlushInterval(b, tc.d)
		if b.GetFlushIntervalSeconds() != tc.secs || b.GetFlushIntervalMillis() != tc.milli {
			t.Errorf("SetFlushInterval(%v) = %ds, %dms; want %ds, %dms", tc.d, b.GetFlushIntervalSeconds(), b.GetFlushIntervalMillis(), tc.secs, tc.milli)
		}
		if got := FlushInterval(b); got != tc.d {
			t.Errorf("FlushInterval after SetFlushInterval(%v) = %v", tc.d, got)
		}
	}
}
