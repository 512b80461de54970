package batcher

import "maps"

// OutputStats counts what an OutputBatcher emitted, for the demo's figures
// ("N lines in M writes") and for metrics.
type OutputStats struct {
	// Batches is the number of OUTPUT_BATCH events, that is stored items
	// holding output.
	Batches int64
	// Lines is the number of output items in those batches (a line split
	// into pieces counts once per piece).
	Lines int64
	// Bytes is the output bytes in those batches.
	Bytes int64
	// Events is the number of other events (process start, end, error).
	Events int64
	// Flushes counts batches by why they were flushed; reasons that never
	// happened are absent.
	Flushes map[Reason]int64
}

func (s *OutputStats) clone() OutputStats {
	c := *s
	c.Flushes = maps.Clone(s.Flushes)
	if c.Flushes == nil {
		c.Flushes = map[Reason]int64{}
	}
	return c
}
