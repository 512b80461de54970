package service

import (
	"bytes"
	"context"
	"io"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/spool-run/spool"
	spoolv1 "github.com/spool-run/spool/gen/spool/v1"
	"github.com/spool-run/spool/internal/events"
)

// Searching a job's log, and reading it whole as the job wrote it. Both
// read the stored log through a feed, as ReadLines does, so they see what
// every other reader sees, under the same permission (PermRead on the
// job's queue).

// Limits of a search. A call scans at most MaxSearchScanLines lines or
// MaxSearchScanBytes of output, whichever comes first, and then says how
// far it got: a log of millions of lines is searched in several calls, so
// that no single request holds a store connection and a CPU for long.
const (
	DefaultSearchMatches = 100
	MaxSearchMatches     = 1000
	MaxSearchQueryBytes  = 1000
	MaxSearchScanLines   = 200_000
	MaxSearchScanBytes   = 64 << 20
)

// SearchRequest asks for the lines of a job's log after line After whose
// text contains Query: at most Limit of them (0: DefaultSearchMatches;
// more than MaxSearchMatches counts as MaxSearchMatches).
//
// Matching is on the text a terminal shows: escape sequences (colours,
// cursor movement, hyperlinks) and control characters are left out, so a
// word split by colour codes is found, and a match never spans a carriage
// return. Letters match either case unless CaseSensitive.
type SearchRequest struct {
	JobID         string
	Query         string
	After         int64
	Limit         int
	CaseSensitive bool
	// ScanLines and ScanBytes bound the lines and output bytes this call
	// looks at (0, or more than MaxSearchScanLines or MaxSearchScanBytes:
	// those). Entrances leave them 0; tests make them small.
	ScanLines int
	ScanBytes int
}

// SearchResult is what one call found.
type SearchResult struct {
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

// SearchLog finds the lines of a job's stored log that contain a text. It
// reads the log from r.After on, a line at a time, and ends at the first
// of: Limit matches (the next match decides HasMore), the scan budget,
// MaxPageBytes of matched lines, or the end of what is stored. Only the
// batches that hold a match are unpacked into events.
func (s *Service) SearchLog(ctx context.Context, r SearchRequest) (*SearchResult, error) {
	if err := checkQuery(r.Query); err != nil {
		return nil, err
	}
	switch {
	case r.Limit < 0 || r.After < 0 || r.ScanLines < 0 || r.ScanBytes < 0:
		return nil, invalid("limit and after_line must not be negative")
	case r.After > MaxLine:
		return nil, invalid("line numbers go up to %d", int64(MaxLine))
	}
	limit := r.Limit
	if limit == 0 {
		limit = DefaultSearchMatches
	}
	limit = min(limit, MaxSearchMatches)
	scanLines, scanBytes := r.ScanLines, r.ScanBytes
	if scanLines == 0 || scanLines > MaxSearchScanLines {
		scanLines = MaxSearchScanLines
	}
	if scanBytes == 0 || scanBytes > MaxSearchScanBytes {
		scanBytes = MaxSearchScanBytes
	}
	feed, err := s.openFeed(ctx, &spoolv1.StreamEventsRequest{JobId: r.JobID, FromLine: r.After + 1,
		EventTypes: []spoolv1.EventType{spoolv1.EventType_EVENT_TYPE_OUTPUT_BATCH}}, 0)
	if err != nil {
		return nil, err
	}
	defer feed.Close()
	job := feed.Job()
	res := &SearchResult{Job: job, NextAfter: r.After, Limit: limit}
	m := newMatcher(r.Query, !r.CaseSensitive)
	var lines, scanned, matched int
	var unpacked lineEvents
	err = eachLine(ctx, feed, func(ev *spoolv1.JobEvent, i int, n int64, out []byte, _ bool) bool {
		if m.match(out) {
			if len(res.Matches) == limit || (len(res.Matches) > 0 && matched+len(out) > MaxPageBytes) {
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
			res.HasMore = !spool.IsFinal(job.GetState()) || n < job.GetLineCount()
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

// checkQuery refuses a query that cannot match anything, or costs more to
// look for than a search should: the text a line is matched against has
// no control characters but tabs (see SearchRequest).
func checkQuery(q string) error {
	switch {
	case q == "":
		return invalid("q is required: the text to look for")
	case len(q) > MaxSearchQueryBytes:
		return invalid("q is %d bytes; at most %d", len(q), MaxSearchQueryBytes)
	case !utf8.ValidString(q):
		return invalid("q must be UTF-8 text")
	case strings.ContainsFunc(q, func(r rune) bool { return r != '\t' && unicode.IsControl(r) }):
		return invalid("q must not contain control characters other than tabs: lines are matched without their escape sequences and control characters")
	}
	return nil
}

// lineEvents gives the lines of stored events as OUTPUT_DATA events of
// their own, as ReadLines gives them, unpacking each batch once however
// many of its lines are asked for.
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

// eachLine calls f with every output line the feed yields, in order: the
// event it is stored in and its index there, its line number, its bytes
// and whether it is partial, until f returns false. Batches are walked in
// place, not unpacked: a search looks at every line but keeps few.
func eachLine(ctx context.Context, feed *Feed, f func(ev *spoolv1.JobEvent, i int, n int64, out []byte, partial bool) bool) error {
	for ev, err := range feed.Events(ctx) {
		if err != nil {
			return err
		}
		if b := ev.GetOutputBatch(); b != nil {
			for i, o := range b.GetOutputs() {
				if !f(ev, i, b.GetFirstLine()+int64(i), o.GetOutput(), o.GetPartial()) {
					return nil
				}
			}
		} else if d := ev.GetOutputData(); d != nil {
			if !f(ev, 0, d.GetLineNumber(), d.GetOutput(), d.GetPartial()) {
				return nil
			}
		}
	}
	return nil
}

// matcher tells whether a line contains the query, on the text the line
// shows (see SearchRequest).
type matcher struct {
	query []byte
	fold  bool
	buf   []byte // the shown text of the line at hand, reused
}

func newMatcher(q string, fold bool) *matcher {
	return &matcher{query: shownText(nil, []byte(q), fold), fold: fold}
}

func (m *matcher) match(line []byte) bool {
	if !m.fold && !hasHidden(line) {
		return bytes.Contains(line, m.query) // most lines: nothing to take out
	}
	m.buf = shownText(m.buf[:0], line, m.fold)
	return bytes.Contains(m.buf, m.query)
}

// isHidden is a byte that starts something a terminal does not print: an
// escape sequence or a control character. A carriage return is kept: the
// query has none, so no match spans one.
func isHidden(c byte) bool {
	return c == 0x7f || (c < 0x20 && c != '\t' && c != '\r')
}

func hasHidden(b []byte) bool {
	for _, c := range b {
		if isHidden(c) {
			return true
		}
	}
	return false
}

// shownText appends to dst what b shows on a terminal, ignoring where the
// cursor goes: escape sequences and control characters other than tab and
// carriage return are dropped, and with fold letters are lower-cased.
// Bytes that are not UTF-8 are kept as they are.
func shownText(dst, b []byte, fold bool) []byte {
	for i := 0; i < len(b); {
		c := b[i]
		switch {
		case c == 0x1b:
			i = skipEscape(b, i)
		case isHidden(c):
			i++
		case c < utf8.RuneSelf:
			if fold && 'A' <= c && c <= 'Z' {
				c += 'a' - 'A'
			}
			dst = append(dst, c)
			i++
		default:
			r, size := utf8.DecodeRune(b[i:])
			if fold && r != utf8.RuneError {
				dst = utf8.AppendRune(dst, unicode.ToLower(r))
			} else {
				dst = append(dst, b[i:i+size]...)
			}
			i += size
		}
	}
	return dst
}

// skipEscape returns the index just past the escape sequence that starts
// at b[i] (an ESC). It takes the same sequences the web UI's renderer
// hides (ansi.js), so that what is found is what is seen: CSI (ESC [ ...
// final byte), OSC (ESC ] ... BEL or ESC \), DCS, SOS, PM and APC (ESC P,
// X, ^ or _ ... ESC \), and other ESC sequences; one cut off by the end of
// the line ends there.
func skipEscape(b []byte, i int) int {
	i++
	if i == len(b) {
		return i
	}
	in := func(c, lo, hi byte) bool { return lo <= c && c <= hi }
	switch b[i] {
	case '[':
		i++
		for i < len(b) && in(b[i], 0x30, 0x3f) {
			i++
		}
		for i < len(b) && in(b[i], 0x20, 0x2f) {
			i++
		}
		if i < len(b) && in(b[i], 0x40, 0x7e) {
			i++
		}
		return i
	case ']':
		for i++; i < len(b); i++ {
			switch {
			case b[i] == 0x07:
				return i + 1
			case b[i] == 0x1b && i+1 < len(b) && b[i+1] == '\\':
				return i + 2
			case b[i] == 0x1b:
				return i // another sequence starts
			}
		}
		return i
	case 'P', 'X', '^', '_':
		end := bytes.IndexByte(b[i:], 0x1b)
		switch {
		case end < 0:
			return len(b)
		case i+end+1 < len(b) && b[i+end+1] == '\\':
			return i + end + 2
		}
		return i + end // another sequence starts
	}
	for i < len(b) && in(b[i], 0x20, 0x2f) {
		i++
	}
	if i < len(b) && in(b[i], 0x30, 0x7e) {
		i++
	}
	return i
}

// RawLog is a job's output as the job wrote it: every line, stdout and
// stderr in the order they were read, each followed by a newline unless
// it is partial (a piece of a longer line, or output that ended without
// one), so the pieces of a line join up again.
type RawLog struct {
	feed *Feed
}

// OpenRawLog checks a request to read a job's whole log. A missing job,
// or one of a queue the caller may not read, is spool.ErrNotFound, before
// anything is read.
func (s *Service) OpenRawLog(ctx context.Context, jobID string) (*RawLog, error) {
	feed, err := s.openFeed(ctx, &spoolv1.StreamEventsRequest{JobId: jobID,
		EventTypes: []spoolv1.EventType{spoolv1.EventType_EVENT_TYPE_OUTPUT_BATCH}}, 0)
	if err != nil {
		return nil, err
	}
	return &RawLog{feed: feed}, nil
}

// Job is the job as it was when the log was opened.
func (r *RawLog) Job() *spoolv1.Job { return r.feed.Job() }

// Close releases the log's feed.
func (r *RawLog) Close() { r.feed.Close() }

// Copy writes the log to w as it reads it, one stored page at a time,
// so a log of any length costs the memory of a page. For a job still
// running it writes what is stored until it reaches the end, and stops
// there. An error may come after some of the log was written.
func (r *RawLog) Copy(ctx context.Context, w io.Writer) (int64, error) {
	var n int64
	var werr error
	newline := []byte{'\n'}
	err := eachLine(ctx, r.feed, func(_ *spoolv1.JobEvent, _ int, _ int64, out []byte, partial bool) bool {
		var k int
		if k, werr = w.Write(out); werr == nil && !partial {
			var nl int
			nl, werr = w.Write(newline)
			k += nl
		}
		n += int64(k)
		return werr == nil
	})
	if werr != nil {
		return n, werr
	}
	return n, err
}
