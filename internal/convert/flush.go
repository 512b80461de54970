package convert

import (
	"time"

	spoolv1 "github.com/spool-run/spool/gen/spool/v1"
)

// FlushInterval is the flush interval b says (0: unset). A job may ask
// for an interval under a second, which only flush_interval_millis can
// hold; when it is set it wins over flush_interval_seconds.
func FlushInterval(b *spoolv1.BatchingConfig) time.Duration {
	if ms := b.GetFlushIntervalMillis(); ms > 0 {
		return time.Duration(ms) * time.Millisecond
	}
	return time.Duration(b.GetFlushIntervalSeconds()) * time.Second
}

// SetFlushInterval writes d into b: in whole seconds, as every worker
// reads it, and, when d is not whole seconds, also in milliseconds for
// the workers that read those. The seconds are rounded up (at least one),
// so a worker that knows only them flushes as near to d as it can.
func SetFlushInterval(b *spoolv1.BatchingConfig, d time.Duration) {
	b.FlushIntervalSeconds, b.FlushIntervalMillis = int32((d+time.Second-1)/time.Second), 0
	if d%time.Second != 0 {
		b.FlushIntervalMillis = int32(max(d/time.Millisecond, 1))
	}
}
