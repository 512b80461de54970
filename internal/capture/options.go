// Package capture turns a process's output stream into batcher.Lines,
// keeping every byte: concatenating each Line's Data, followed by a newline
// unless it is Partial, gives back the stream exactly (with StripCR, the
// stream less the carriage returns just before each newline).
package capture

import (
	"time"

	spoolv1 "github.com/spool-run/spool/gen/spool/v1"
	"github.com/spool-run/spool/internal/batcher"
)

// DefaultIdleFlush is how long an unfinished line waits before it is shown:
// long enough that ordinary lines arrive whole, short enough that a prompt
// or a progress message does not look like a hang.
const DefaultIdleFlush = time.Second

// DefaultMaxLine is the longest piece used when Options.MaxLine is unset: the
// default batch byte limit, so every piece fits a batch.
const DefaultMaxLine = batcher.DefaultMaxBatchBytes

// Options configures Lines.
type Options struct {
	// Stream is recorded on every Line.
	Stream spoolv1.StreamType
	// MaxLine: a line longer than this is split into pieces of at most
	// MaxLine bytes, all but the last Partial, never dropped. Set it to the
	// job's max_batch_bytes. 0 or less: DefaultMaxLine.
	MaxLine int
	// IdleFlush: an unfinished line (no newline yet) that has waited this
	// long is emitted as a Partial Line so prompts and progress text show
	// up; the rest of that line comes in the next Line. 0: DefaultIdleFlush;
	// negative: never (only size and EOF end a piece).
	IdleFlush time.Duration
	// Clock times the idle flush and stamps Lines (nil: the system clock).
	Clock batcher.Clock
	// StripCR drops the carriage returns that come just before a newline.
	// Set it for what a pseudo-terminal wrote: the terminal sends every
	// "\n" on as "\r\n", so every line would otherwise end in a "\r" the
	// program never wrote. A "\r" followed by anything else (a progress
	// bar redrawing its line) is kept. Lines still come out the same
	// however the stream is cut into reads.
	StripCR bool
}

func (o Options) withDefaults() Options {
	if o.MaxLine <= 0 {
		o.MaxLine = DefaultMaxLine
	}
	if o.IdleFlush == 0 {
		o.IdleFlush = DefaultIdleFlush
	}
	if o.Clock == nil {
		o.Clock = batcher.SystemClock()
	}
	return o
}
