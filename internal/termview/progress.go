package termview

import (
	"fmt"
	"io"
	"time"
)

// progressEvery is how often the progress line is redrawn at most: often
// enough to look alive, rarely enough to cost the terminal nothing.
const progressEvery = 250 * time.Millisecond

// ReplayProgress is the line kept on a terminal while a long log is
// printed: "spool: 12,000 of 80,000 lines (15%) · 41,000 lines/s". It is
// drawn between batches, without a newline, and erased (the cursor back to
// the start of the row, the row cleared) before anything else is written
// to the terminal, and for good once the replay is done.
type ReplayProgress struct {
	term        Info
	w           io.Writer // the terminal
	first, last int64     // the lines of the replay
	now         func() time.Time
	began       time.Time
	drawnAt     time.Time // the last draw (began until the first)
	drawn       bool      // the line is on the screen
	over        bool      // the replay is done: nothing more to show
}

// NewReplayProgress draws on w, a terminal as t says, the progress of
// printing lines first to last, timed by now.
func NewReplayProgress(w io.Writer, t Info, first, last int64, now func() time.Time) *ReplayProgress {
	p := &ReplayProgress{term: t, w: w, first: first, last: last, now: now, began: now()}
	p.drawnAt = p.began
	return p
}

// Printed is told the last line printed after each batch.
func (p *ReplayProgress) Printed(line int64) {
	if p.over {
		return
	}
	if line >= p.last {
		// Everything that was stored is out: the rest, when following, is
		// live output, which needs no progress line.
		p.End()
		return
	}
	now := p.now()
	if now.Sub(p.drawnAt) < progressEvery {
		return
	}
	p.drawnAt = now
	done, total := line-p.first+1, p.last-p.first+1
	text := fmt.Sprintf("spool: %s of %s lines (%d%%)", Thousands(done), Thousands(total), done*100/total)
	if secs := now.Sub(p.began).Seconds(); secs > 0 {
		text += fmt.Sprintf(" · %s lines/s", Thousands(int64(float64(done)/secs)))
	}
	// Cut to the width: a line that wrapped could not be erased.
	text = Truncate(text, max(1, p.term.Width-1))
	if p.term.Color {
		text = Dim + text + Reset
	}
	p.erase()
	io.WriteString(p.w, text)
	p.drawn = true
}

// erase takes the progress line off the screen, if it is on it.
func (p *ReplayProgress) erase() {
	if p.drawn {
		io.WriteString(p.w, ClearLine)
		p.drawn = false
	}
}

// End erases the progress line for good.
func (p *ReplayProgress) End() {
	p.erase()
	p.over = true
}

// Erasing is w, a stream to the same terminal, erasing the progress line
// before each write so no output lands on the row it occupied.
func (p *ReplayProgress) Erasing(w io.Writer) io.Writer { return erasing{p: p, w: w} }

type erasing struct {
	p *ReplayProgress
	w io.Writer
}

func (e erasing) Write(b []byte) (int, error) {
	e.p.erase()
	return e.w.Write(b)
}
