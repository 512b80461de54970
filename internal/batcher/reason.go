package batcher

import "strconv"

// Reason says why a batch was flushed. Metrics and the demo count flushes
// by reason, so the numbering only ever grows.
type Reason int

const (
	// ReasonSize: the batch reached Config.MaxItems.
	ReasonSize Reason = iota + 1
	// ReasonBytes: the batch reached Config.MaxBytes, or the next item
	// would have taken it over.
	ReasonBytes
	// ReasonInterval: the flush interval (or the watched interval) passed.
	ReasonInterval
	// ReasonQuick: the first items after a quiet spell waited QuickDelay.
	ReasonQuick
	// ReasonCritical: Do flushed before running its function.
	ReasonCritical
	// ReasonClose: Close flushed the rest.
	ReasonClose
	// ReasonExplicit: the caller asked for a flush.
	ReasonExplicit
)

var reasonNames = [...]string{
	ReasonSize:     "size",
	ReasonBytes:    "bytes",
	ReasonInterval: "interval",
	ReasonQuick:    "quick",
	ReasonCritical: "critical",
	ReasonClose:    "close",
	ReasonExplicit: "explicit",
}

// Reasons lists every reason in numeric order, for reports and metrics.
func Reasons() []Reason {
	rs := make([]Reason, 0, len(reasonNames)-1)
	for r := ReasonSize; int(r) < len(reasonNames); r++ {
		rs = append(rs, r)
	}
	return rs
}

func (r Reason) String() string {
	if r > 0 && int(r) < len(reasonNames) {
		return reasonNames[r]
	}
	return "Reason(" + strconv.Itoa(int(r)) + ")"
}
