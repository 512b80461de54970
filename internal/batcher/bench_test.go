package batcher_test

import (
	"testing"
	"time"

	spoolv1 "github.com/spool-run/spool/gen/spool/v1"
	"github.com/spool-run/spool/internal/batcher"
	"github.com/spool-run/spool/internal/batcher/batchertest"
	"github.com/spool-run/spool/internal/events"
)

// BenchmarkOutputBatcher measures lines through Line and emit with the
// default batching (50 lines per batch), emit discarding the events.
//
//	go test -run '^$' -bench OutputBatcher -benchmem ./internal/batcher/
func BenchmarkOutputBatcher(b *testing.B) {
	clock := batchertest.NewClock(time.Time{})
	var batches int
	o := batcher.NewOutput(batcher.OutputConfig{}, 1, 1, clock, func(*spoolv1.JobEvent) { batches++ })
	line := events.Line{Data: []byte("2025-01-01T00:00:00Z INFO compiling internal/batcher (12 of 40 packages)"), Stream: spoolv1.StreamType_STREAM_TYPE_STDOUT, Time: clock.Now()}
	b.ReportAllocs()
	b.SetBytes(int64(len(line.Data)))
	for b.Loop() {
		o.Line(line)
	}
	o.Close()
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "lines/s")
	b.ReportMetric(float64(b.N)/float64(batches), "lines/batch")
}
