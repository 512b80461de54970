package jobjson

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/spool-run/spool"
	spoolv1 "github.com/spool-run/spool/gen/spool/v1"
	"github.com/spool-run/spool/internal/convert"
)

var update = flag.Bool("update", false, "rewrite testdata/*.json from the current views")

// at is a time with nanoseconds, which JSON keeps.
func at(sec int64) *timestamppb.Timestamp {
	return timestamppb.New(time.Unix(1_760_000_000+sec, 123456789))
}

// fullJob has every field a job can carry set, so the golden file pins
// each field's name, format and omission rule.
func fullJob() *spoolv1.Job {
	return &spoolv1.Job{
		JobId: "0199aaaa-0000-7000-8000-000000000001", Queue: "builds", State: spoolv1.JobState_JOB_STATE_FAILED,
		CreatedAt: at(0), UpdatedAt: at(9), StartedAt: at(3), LeaseExpiresAt: at(60), RunAfter: at(2),
		Params: &spoolv1.JobParams{
			Argv: []string{"make", "test"}, Env: map[string]string{"B": "2", "A": "1"}, WorkingDir: "src",
			Timeout: durationpb.New(90*time.Second + 500*time.Millisecond), RepositoryUrl: "https://example.com/r.git", Ref: "main",
			Stdin: []byte("in\x00put"), Pty: true, SecretNames: []string{"TOKEN", "USER"},
			Scatter: &spoolv1.ScatterMember{ScatterId: "sc1", BatchIndex: 2, BatchCount: 5, ItemCount: 40, Gather: true},
		},
		ExecutionConfig: &spoolv1.ExecutionConfig{HeartbeatIntervalSeconds: 10,
			Batching: &spoolv1.BatchingConfig{FlushIntervalSeconds: 2, MaxBatchSize: 50, MaxBatchBytes: 262144, PlaybackIntervalMillis: 50}},
		RequestId: "req-1", Attempt: 3, MaxAttempts: 4, CancelRequested: true,
		Result:       &spoolv1.JobResult{ExitCode: 2, Error: "exit status 2", StartedAt: at(3), FinishedAt: at(8), Attempt: 3, Output: `{"ok":false}`},
		LastSequence: 120, LineCount: 117, Retries: 2, RetriedAttempts: 1, ReleasedAttempts: 1,
		CancelReason: "enough", Notes: []string{"retried after exit 1", "output lost"},
		RerunOf: "0199aaaa-0000-7000-8000-000000000000", Reruns: []string{"0199aaaa-0000-7000-8000-000000000002"},
		Priority: 1, After: []string{"0199aaaa-0000-7000-8000-00000000000a"}, Followers: []string{"0199aaaa-0000-7000-8000-00000000000b"},
		Schedule: "nightly", Notify: []string{"https://example.com/hook"}, NotifyDue: at(70),
		Deliveries: []*spoolv1.Delivery{{DeliveryId: "d-1", Url: "https://example.com/hook", Try: 1, At: at(10), Status: 503,
			Error: "503 Service Unavailable", Took: durationpb.New(120 * time.Millisecond)}},
	}
}

// externalJob is the log of a program spool did not start, still open.
func externalJob() *spoolv1.Job {
	return &spoolv1.Job{
		JobId: "0199aaaa-0000-7000-8000-000000000003", Queue: "default", State: spoolv1.JobState_JOB_STATE_RUNNING,
		CreatedAt: at(0), UpdatedAt: at(1), StartedAt: at(0), Attempt: 1, MaxAttempts: 1, LineCount: 4, LastSequence: 4,
		Params: &spoolv1.JobParams{External: &spoolv1.External{Source: "/aws/lambda/f:2025/01/01/[$LATEST]abc"}},
	}
}

func fullScatter() *spoolv1.Scatter {
	count, pct := int32(3), float32(12.5)
	return &spoolv1.Scatter{
		ScatterId: "sc1", State: spoolv1.ScatterState_SCATTER_STATE_GATHERING, Error: "two batches failed",
		CreatedAt: at(0), UpdatedAt: at(5), GatherJobId: "sc1.gather",
		Progress: &spoolv1.ScatterProgress{BatchCount: 5, Waiting: 1, Queued: 1, Running: 1, Succeeded: 1, Failed: 1, Cancelled: 0, ItemCount: 100, ItemsDone: 20},
		Spec: &spoolv1.ScatterSpec{Queue: "q", Params: &spoolv1.JobParams{Script: "./run.sh", Env: map[string]string{"X": "y"}}, MaxAttempts: 2, Retries: 1,
			BatchInput: `{"k":1}`, MaxConcurrency: 3, ToleratedFailureCount: &count, ToleratedFailurePercentage: &pct,
			Gather: &spoolv1.JobParams{Script: "jq -s .", Timeout: durationpb.New(time.Minute)}},
	}
}

// goldenViews are what the REST API and --json print for the jobs, scatters
// and queues above, as they come from the wire, keyed by their golden file.
// The files were written when the views still read the wire's messages
// themselves: these views of spool's types must print them byte for byte
// (fields added since are added to the files).
func goldenViews() map[string]any {
	plainScatter := proto.Clone(fullScatter()).(*spoolv1.Scatter)
	plainScatter.Spec.BatchInput, plainScatter.Spec.Gather = "", nil
	plainScatter.Spec.ToleratedFailureCount, plainScatter.Spec.ToleratedFailurePercentage = nil, nil
	queues := []*spool.Queue{
		convert.Queue(&spoolv1.Queue{Name: "builds", Paused: true, PausedAt: at(4), Scheduled: 5, MaxRunning: 3, Queued: 7, Running: 2, Succeeded: 30, Failed: 3, Cancelled: 1, OldestQueuedAt: at(1), Workers: 4}),
		convert.Queue(&spoolv1.Queue{Name: "default"}),
	}
	return map[string]any{
		"job.json":     View(convert.Job(fullJob())),
		"jobs.json":    ListView(convert.Jobs([]*spoolv1.Job{fullJob(), externalJob(), {JobId: "empty"}}), "cursor-2"),
		"scatter.json": ScatterListView(convert.Scatters([]*spoolv1.Scatter{fullScatter(), plainScatter}), "next"),
		"batches.json": ScatterBatchesView(convert.ScatterBatches([]*spoolv1.ScatterBatch{{BatchIndex: 0, ItemCount: 3, Job: fullJob()}, {BatchIndex: 1}}), 2),
		"queues.json":  QueueListView(queues, time.Hour),
		"schedules.json": ScheduleListView(convert.Schedules([]*spoolv1.Schedule{{Name: "nightly", Cron: "0 3 * * *", Timezone: "Europe/Paris",
			Job:     &spoolv1.EnqueueJobRequest{Queue: "builds", Params: &spoolv1.JobParams{Argv: []string{"make", "nightly"}}, Priority: 3, Notify: []string{"https://example.com/hook"}},
			Overlap: spoolv1.Overlap_OVERLAP_SKIP, Missed: spoolv1.Missed_MISSED_RUN_ONCE, CreatedAt: at(0), UpdatedAt: at(5), LastTickAt: at(4), LastJobId: "0199aaaa-0000-7000-8000-000000000001",
			NextTickAt: at(86404), Revision: 3}})),
	}
}

// TestGolden pins the JSON of jobs, scatters and queues byte for byte:
// scripts read it from the REST API and from --json.
func TestGolden(t *testing.T) {
	for name, v := range goldenViews() {
		got, err := json.MarshalIndent(v, "", "  ")
		if err != nil {
			t.Fatal(err)
		}
		path := filepath.Join("testdata", name)
		if *update {
			if err := os.WriteFile(path, append(got, '\n'), 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		want, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(append(got, '\n'), want) {
			t.Errorf("%s changed:\n%s\nwant:\n%s", name, got, want)
		}
	}
}
