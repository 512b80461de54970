package sqlitestore_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	spoolv1 "github.com/spool-run/spool/gen/spool/v1"
	"github.com/spool-run/spool/internal/events"
	"github.com/spool-run/spool/internal/store"
	"github.com/spool-run/spool/internal/store/backends/sqlitestore"
	"github.com/spool-run/spool/internal/store/storekit"
)

// BenchmarkRetentionSweep deletes finished jobs of 200 lines each the way
// the retention sweeper does (EndedBefore, then DeleteJob one by one) and
// gives the space back (ReclaimSpace). It reports deleted jobs/s and the
// database file's size before and after.
//
//	go test -run '^$' -bench RetentionSweep -benchtime 2000x ./internal/store/backends/sqlitestore/
func BenchmarkRetentionSweep(b *testing.B) {
	ctx := context.Background()
	path := filepath.Join(b.TempDir(), "spool.db")
	s, err := sqlitestore.Open(ctx, path, sqlitestore.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	exec := &spoolv1.ExecutionConfig{Batching: &spoolv1.BatchingConfig{MaxBatchSize: 50, MaxBatchBytes: 256 << 10, FlushIntervalSeconds: 2}}
	lines := make([]events.Line, 50)
	for i := range lines {
		lines[i] = events.Line{Stream: spoolv1.StreamType_STREAM_TYPE_STDOUT, Data: fmt.Appendf(nil, "line %d of a build's output, with some text in it", i)}
	}
	for range b.N {
		if _, _, err := s.Enqueue(ctx, store.NewJob{Queue: "q", Params: &spoolv1.JobParams{Argv: []string{"make"}}, Execution: exec, MaxAttempts: 1}); err != nil {
			b.Fatal(err)
		}
		ls, err := s.Dequeue(ctx, store.DequeueRequest{Queue: "q", Max: 1, LeaseDuration: time.Minute})
		if err != nil || len(ls) != 1 {
			b.Fatalf("dequeue: %d, %v", len(ls), err)
		}
		l := ls[0]
		for seq := l.Head.NextSequence; seq < l.Head.NextSequence+200; seq += 50 {
			if _, err := s.Append(ctx, l.LeaseRef, events.Messages(events.Batch{Sequence: seq, Lines: lines}.Event())); err != nil {
				b.Fatal(err)
			}
		}
		if _, err := s.Complete(ctx, l.LeaseRef, &spoolv1.JobResult{}); err != nil {
			b.Fatal(err)
		}
	}
	size := func() float64 {
		fi, err := os.Stat(path)
		if err != nil {
			b.Fatal(err)
		}
		return float64(fi.Size()) / 1024
	}
	before := size()
	b.ResetTimer()
	deleted := 0
	for {
		ids, err := s.EndedBefore(ctx, storekit.Now().Add(time.Second), 100)
		if err != nil {
			b.Fatal(err)
		}
		if len(ids) == 0 {
			break
		}
		for _, id := range ids {
			if err := s.DeleteJob(ctx, id); err != nil {
				b.Fatal(err)
			}
			deleted++
		}
	}
	for range 50 {
		if err := s.ReclaimSpace(ctx); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	if deleted != b.N {
		b.Fatalf("deleted %d jobs, made %d", deleted, b.N)
	}
	b.ReportMetric(float64(deleted)/b.Elapsed().Seconds(), "jobs/s")
	b.ReportMetric(before, "KiB-before")
	b.ReportMetric(size(), "KiB-after")
}
