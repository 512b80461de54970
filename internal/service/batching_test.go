package service

import (
	"errors"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/spool-run/spool"
	spoolv1 "github.com/spool-run/spool/gen/spool/v1"
	"github.com/spool-run/spool/internal/convert"
)

// TestJobBatchingBounds: a job's own batching within the server's bounds
// for jobs is stored in its ExecutionConfig (an unset field keeps the
// server's); beyond them it is refused with an error naming the bound, its
// value and its setting.
func TestJobBatchingBounds(t *testing.T) {
	o := newOperator(t)
	b := o.s.cfg.Execution.Batching // defaults: 2s, 50 lines; jobs 100ms-60s, up to 1000 lines
	ms := func(n int64) *durationpb.Duration { return durationpb.New(time.Duration(n) * time.Millisecond) }
	for _, tc := range []struct {
		name      string
		batching  *spoolv1.JobBatching
		wantFlush time.Duration
		wantLines int32
		wantErr   string
	}{
		{"none", nil, 2 * time.Second, 50, ""},
		{"lines only", &spoolv1.JobBatching{MaxBatchSize: 10}, 2 * time.Second, 10, ""},
		{"short flush", &spoolv1.JobBatching{FlushInterval: ms(200)}, 200 * time.Millisecond, 50, ""},
		{"both at the bounds", &spoolv1.JobBatching{FlushInterval: ms(100), MaxBatchSize: 1000}, 100 * time.Millisecond, 1000, ""},
		{"longest flush", &spoolv1.JobBatching{FlushInterval: ms(60000)}, time.Minute, 50, ""},
		{"too many lines", &spoolv1.JobBatching{MaxBatchSize: 1001}, 0, 0,
			"params.batching.max_batch_size 1001 is above this server's maximum for a job, 1000 lines a batch (execution.batching.job_max_batch_size)"},
		{"negative lines", &spoolv1.JobBatching{MaxBatchSize: -1}, 0, 0, "params.batching.max_batch_size -1 is negative"},
		{"flush too short", &spoolv1.JobBatching{FlushInterval: ms(50)}, 0, 0,
			"params.batching.flush_interval 50ms is below this server's minimum for a job, 100ms (execution.batching.job_min_flush_interval_millis)"},
		{"flush too long", &spoolv1.JobBatching{FlushInterval: ms(61000)}, 0, 0,
			"params.batching.flush_interval 1m1s is above this server's maximum for a job, 1m0s (execution.batching.job_max_flush_interval_seconds)"},
		{"flush zero", &spoolv1.JobBatching{FlushInterval: ms(0)}, 0, 0, "params.batching.flush_interval must be a positive duration"},
		{"flush negative", &spoolv1.JobBatching{FlushInterval: ms(-5)}, 0, 0, "params.batching.flush_interval must be a positive duration"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp, err := o.s.EnqueueJob(o.ctx, &spoolv1.EnqueueJobRequest{Queue: "ci", Params: &spoolv1.JobParams{Argv: []string{"true"}, Batching: tc.batching}})
			if tc.wantErr != "" {
				if !errors.Is(err, spool.ErrInvalidArgument) || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("EnqueueJob: %v; want ErrInvalidArgument saying %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got := resp.GetJob().GetExecutionConfig().GetBatching()
			if convert.FlushInterval(got) != tc.wantFlush || got.GetMaxBatchSize() != tc.wantLines || got.GetMaxBatchBytes() != b.MaxBatchBytes {
				t.Fatalf("stored batching %v; want flush %v, %d lines, the server's bytes", got, tc.wantFlush, tc.wantLines)
			}
			// The worker is given what was stored.
			ls := o.dequeue(t, "ci", 0)
			if len(ls) != 1 || convert.FlushInterval(ls[0].GetJob().GetExecutionConfig().GetBatching()) != tc.wantFlush {
				t.Fatalf("the lease's batching: %v", ls)
			}
			if _, err := o.s.CompleteJob(o.ctx, &spoolv1.CompleteJobRequest{TaskToken: ls[0].GetTaskToken(), Result: &spoolv1.JobResult{}}); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestRerunKeepsBatching: a rerun asks for the batching its job asked for,
// under the server's bounds as they are now.
func TestRerunKeepsBatching(t *testing.T) {
	o := newOperator(t)
	_, err := o.s.EnqueueJob(o.ctx, &spoolv1.EnqueueJobRequest{Queue: "ci", Params: &spoolv1.JobParams{Argv: []string{"true"},
		Batching: &spoolv1.JobBatching{MaxBatchSize: 10}}})
	if err != nil {
		t.Fatal(err)
	}
	old := o.run(t, "ci", 0)
	resp, err := o.s.RerunJob(o.ctx, &spoolv1.RerunJobRequest{JobId: old.GetJobId()})
	if err != nil {
		t.Fatal(err)
	}
	if n := resp.GetJob().GetExecutionConfig().GetBatching().GetMaxBatchSize(); n != 10 {
		t.Fatalf("the rerun batches %d lines, want 10", n)
	}
	o.s.cfg.Execution.Batching.JobMaxBatchSize = 5
	_, err = o.s.RerunJob(o.ctx, &spoolv1.RerunJobRequest{JobId: old.GetJobId()})
	if !errors.Is(err, spool.ErrInvalidArgument) || !strings.Contains(err.Error(), "execution.batching.job_max_batch_size") {
		t.Fatalf("rerun beyond the narrowed bound: %v", err)
	}
}
