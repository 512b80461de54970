// Package logsearch finds text in a job's log, on the text a terminal
// shows, and writes a log out whole as the job wrote it. It reads events
// it is given: the service core opens the job's feed (checking who may
// read it) and hands its events here, so a search sees what every other
// reader sees.
package logsearch

import (
	"iter"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/spool-run/spool"
	spoolv1 "github.com/spool-run/spool/gen/spool/v1"
	"github.com/spool-run/spool/internal/apierr"
	"github.com/spool-run/spool/internal/convert"
	"github.com/spool-run/spool/internal/events"
)

// Limits of a search. A call scans at most MaxScanLines lines or
// MaxScanBytes of output, whichever comes first, and then says how far it
// got: a log of millions of lines is searched in several calls, so that no
// single request holds a store connection and a CPU for long.
const (
	DefaultMatches = 100
	MaxMatches     = 1000
	MaxQueryBytes  = 1000
	MaxScanLines   = 200_000
	MaxScanBytes   = 64 << 20
)

// Request asks for the lines of a job's log after line After whose text
// contains Query: at most Limit of them (0: DefaultMatches; more than
// MaxMatches counts as MaxMatches).
//
// Matching is on the text a terminal shows: escape sequences (colours,
// cursor movement, hyperlinks) and control characters are left out, so a
// word split by colour codes is found, and a match never spans a carriage
// return. Letters match either case unless CaseSensitive.
type Request struct {
	JobID         string
	Query         string
	After         int64
	Limit         int
	CaseSensitive bool
	// ScanLines and ScanBytes bound the lines and output bytes this call
	// looks at (0, or more than MaxScanLines or MaxScanBytes: those).
	// Entrances leave them 0; tests make them small.
	ScanLines int
	ScanBytes int
}

// Result is what one call found.
type Result struct {
	// Job is the job as it was read, before its lines.
	Job *spoolv1.Job
	// Matches are OUTPUT_DATA events, one per matching line, in line
	// order.
	Matches []*spoolv1.JobEvent
	// NextAfter is where the next call goes on (its After): every match
	// between After and NextAfter is in Matches.
	NextAfter int64
	// HasMore says a call from NextAfter may find more: this one stopped
	// at its limit, or at its scan budget (ScanStopped), before the end of
	// the stored log.
	HasMore bool
	// ScanStopped: the call used up its scan budget; it looked at the
	// lines up to NextAfter and no further.
	ScanStopped bool
	// Limit is the number of matches asked for, as used.
	Limit int
}

// Check refuses a request that cannot match anything, or costs more to
// look for than a search should: the text a line is matched against has
// no control characters but tabs (see Request).
func Check(r Request) error {
	q := r.Query
	switch {
	case q == "":
		return invalid("q is required: the text to look for")
	case len(q) > MaxQueryBytes:
		return invalid("q is %d bytes; at most %d", len(q), MaxQueryBytes)
	case !utf8.ValidString(q):
		return invalid("q must be UTF-8 text")
	case strings.ContainsFunc(q, func(r rune) bool { return r != '\t' && unicode.IsControl(r) }):
		return invalid("q must not contain control characters other than tabs: lines are matched without their escape sequences and control characters")
	case r.Limit < 0 || r.After < 0 || r.ScanLines < 0 || r.ScanBytes < 0:
		return invalid("limit and after_line must not be negative")
	}
	return nil
}

func invalid(format string, args ...any) error {
	return apierr.Errorf(spool.ErrInvalidArgument, format, args...)
}

// Search finds the lines of job's log that contain r's text, in evs, the
// log's output from line r.After+1 on, a line at a time. It ends at the
// first of: the limit of matches (the next match decides HasMore), the
// scan budget, maxPageBytes of matched lines, or the end of evs. Only the
// batches that hold a match are unpacked into events. r is checked
// (Check) before.
func Search(job *spoolv1.Job, evs iter.Seq2[*spoolv1.JobEvent, error], r Request, maxPageBytes int) (*Result, error) {
	limit := r.Limit
	if limit == 0 {
		limit = DefaultMatches
	}
	limit = min(limit, MaxMatches)
	scanLines, scanBytes := r.ScanLines, r.ScanBytes
	if scanLines == 0 || scanLines > MaxScanLines {
		scanLines = MaxScanLines
	}
	if scanBytes == 0 || scanBytes > MaxScanBytes {
		scanBytes = MaxScanBytes
	}
	res := &Result{Job: job, NextAfter: r.After, Limit: limit}
	m := newMatcher(r.Query, !r.CaseSensitive)
	var lines, scanned, matched int
	var unpacked lineEvents
	err := EachLine(evs, func(ev *spoolv1.JobEvent, i int, n int64, out []byte, _ bool) bool {
		if m.match(out) {
			if len(res.Matches) == limit || (len(res.Matches) > 0 && matched+len(out) > maxPageBytes) {
				// This match is the next call's first: go on just before it.
				res.HasMore = true
				return false
			}
			res.Matches = append(res.Matches, unpacked.at(ev, i))
			matched += len(out)
		}
		res.NextAfter = n
		lines++
		scanned += len(out)
		if lines >= scanLines || scanned >= scanBytes {
			// A final job's line count is its last line: a budget that
			// runs out on it has searched the whole log.
			res.HasMore = !convert.State(job.GetState()).IsFinal() || n < job.GetLineCount()
			res.ScanStopped = res.HasMore
			return false
		}
		return true
	})
	if err != nil {
		return nil, err
	}
	return res, nil
}

// lineEvents gives the lines of stored events as OUTPUT_DATA events of
// their own, as a page of lines gives them, unpacking each batch once
// however many of its lines are asked for.
type lineEvents struct {
	ev    *spoolv1.JobEvent
	lines []*spoolv1.JobEvent
}

// at is line i of ev.
func (u *lineEvents) at(ev *spoolv1.JobEvent, i int) *spoolv1.JobEvent {
	if u.ev != ev {
		u.ev, u.lines = ev, events.Unpack(ev)
	}
	return u.lines[i]
}
