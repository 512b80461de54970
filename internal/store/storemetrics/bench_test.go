package storemetrics_test

import (
	"context"
	"testing"

	"github.com/spool-run/spool/internal/store"
	"github.com/spool-run/spool/internal/store/backends/memstore"
	"github.com/spool-run/spool/internal/store/storemetrics"
	"github.com/spool-run/spool/internal/telemetry"
)

// BenchmarkOverhead is what the wrapper adds to a call: the cheapest call
// of the memory store, bare and measured (go test -bench Overhead
// -benchmem ./internal/store/storemetrics/). The difference is the cost
// per call of the store's metrics, allocations included.
func BenchmarkOverhead(b *testing.B) {
	ctx := context.Background()
	for _, c := range []struct {
		name string
		st   func() store.JobStore
	}{
		{"bare", func() store.JobStore { return memstore.New() }},
		{"measured", func() store.JobStore {
			return storemetrics.Wrap(memstore.New(), "memory", telemetry.Must(telemetry.New()).Meter("bench"))
		}},
	} {
		b.Run(c.name, func(b *testing.B) {
			st := c.st()
			defer st.Close()
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					if _, err := st.QueuePaused(ctx, "default"); err != nil {
						b.Fatal(err)
					}
				}
			})
		})
	}
}
