package capture_test

import (
	"bytes"
	"fmt"
	"testing"
	"time"

	"github.com/spool-run/spool/internal/batcher/batchertest"
	"github.com/spool-run/spool/internal/capture"
	"github.com/spool-run/spool/internal/events"
)

// BenchmarkLines measures bytes through Lines: typical log lines, and one
// long line split into MaxLine pieces.
//
//	go test -run '^$' -bench Lines -benchmem ./internal/capture/
func BenchmarkLines(b *testing.B) {
	var logs []byte
	for i := 0; len(logs) < 4<<20; i++ {
		logs = fmt.Appendf(logs, "2025-01-01T00:00:%02dZ INFO worker: step %d of the build finished in %dms\n", i%60, i, i%997)
	}
	long := append(bytes.Repeat([]byte("x"), 4<<20), '\n')
	for _, bc := range []struct {
		name string
		in   []byte
	}{{"log-lines", logs}, {"long-line", long}} {
		b.Run(bc.name, func(b *testing.B) {
			opts := capture.Options{Stream: stderr, MaxLine: 256 << 10, Clock: batchertest.NewClock(time.Time{})}
			var lines int
			b.ReportAllocs()
			b.SetBytes(int64(len(bc.in)))
			for b.Loop() {
				if err := capture.Lines(bytes.NewReader(bc.in), opts, func(events.Line) { lines++ }); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(lines)/b.Elapsed().Seconds(), "lines/s")
		})
	}
}
