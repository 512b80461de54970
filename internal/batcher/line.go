package batcher

import (
	"time"

	spoolv1 "github.com/spool-run/spool/gen/spool/v1"
)

// Line is one line (or piece of a line) of a process's output.
type Line struct {
	// Data is the line without its trailing newline; not necessarily
	// UTF-8. It should be at most the job's max_batch_bytes long (capture
	// splits longer lines; OutputBatcher splits any that still are). The
	// batcher keeps Data until the batch is emitted, so the caller must not
	// modify it after handing it over.
	Data   []byte
	Stream spoolv1.StreamType
	// Partial: no newline followed Data; the line goes on in the next Line
	// of the same stream, or the output ended without a newline.
	Partial bool
	// Time is when the line was read (the clock's now if zero).
	Time time.Time
}
