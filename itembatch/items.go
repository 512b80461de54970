package itembatch

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"unicode/utf8"
)

// Item is one item, compact JSON.
//
// It is a json.RawMessage so that items pass through untouched: spool never
// needs to know what is inside one, only where it starts and ends, and
// decoding into Go values would lose number precision and key order.
type Item = json.RawMessage

// maxItemBytes bounds one item as it is written in the input. Without a
// bound, an input with no line breaks, or an array element that never ends,
// would be read into memory until the machine runs out of it.
const maxItemBytes = 64 << 20

// bom is the UTF-8 byte order mark.
const bom = "\ufeff"

// ReadItems reads items as JSON Lines (one JSON value a line; blank lines
// skipped) or, when the first non-space byte is '[', as one JSON array. Every
// item is returned compacted (json.Compact), so that batch sizes measured
// later do not depend on how the input was indented.
//
// Errors name the line (JSON Lines) or the item index and byte offset (array)
// and what is wrong, e.g. "items line 3: invalid JSON: ...". A value that is
// not valid JSON, data after the array, or invalid UTF-8 is an error. One
// item may be up to 64 MiB as written; a longer one is an error.
//
// The two forms overlap: JSON Lines whose first item is itself an array are
// read as one array, which fails on the second line (or, with one line only,
// gives that array's elements as the items). Write such lists as one JSON
// array instead.
//
// A UTF-8 byte order mark at the start is skipped. Empty input (or input of
// only spaces) gives no items and no error.
//
// ReadItems holds every item in memory; [NewItemReader] reads the same
// input one item at a time.
func ReadItems(r io.Reader) ([]Item, error) {
	return readAll(newItemReader(r, maxItemBytes))
}

// readItems is ReadItems with the item limit as a parameter, so that tests
// can cross it without allocating 64 MiB.
func readItems(r io.Reader, limit int) ([]Item, error) {
	return readAll(newItemReader(r, limit))
}

// readAll reads every item of ir.
func readAll(ir *ItemReader) ([]Item, error) {
	var items []Item
	for {
		it, err := ir.Next()
		if err == io.EOF {
			return items, nil
		}
		if err != nil {
			return nil, err
		}
		items = append(items, it)
	}
}

// ItemReader reads items one at a time, so that an input of any size can
// be cut into batches (with a [Splitter]) in bounded memory: it holds one
// item and its read buffer, never the items before. Its rules and errors
// are those of [ReadItems] or [ReadCSVItems], whichever made it.
type ItemReader struct {
	next func() (Item, error)
	// err is the error Next returned, returned again by every later call.
	err error
	// count is the number of items returned.
	count int64
	// read is where the input stands: the bytes consumed from it.
	read func() int64
}

// NewItemReader returns a reader of JSON Lines or one JSON array, as
// ReadItems reads them.
func NewItemReader(r io.Reader) *ItemReader {
	return newItemReader(r, maxItemBytes)
}

func newItemReader(r io.Reader, limit int) *ItemReader {
	br := bufio.NewReaderSize(r, 64<<10)
	ir := &ItemReader{}
	var pos int64
	ir.read = func() int64 { return pos }
	ir.next = func() (Item, error) {
		// Some Windows tools start text files with a byte order mark. JSON
		// allows a reader to ignore it, and failing on an invisible
		// character would only puzzle the person.
		if b, _ := br.Peek(len(bom)); string(b) == bom {
			_, _ = br.Discard(len(bom))
			pos = int64(len(bom))
		}
		// Skip the leading space to see which form this is. Newlines are
		// counted so that JSON Lines errors still name the right line.
		line := 1
		for {
			c, err := br.ReadByte()
			if err == io.EOF {
				return nil, io.EOF
			}
			if err != nil {
				return nil, readError(err)
			}
			if !isSpace(c) {
				_ = br.UnreadByte() // cannot fail right after ReadByte
				if c == '[' {
					a := &arrayReader{br: br, pos: pos, limit: limit}
					ir.read = func() int64 { return a.pos }
					ir.next = a.next
				} else {
					l := &lineReader{br: br, line: line, pos: pos, limit: limit}
					ir.read = func() int64 { return l.pos }
					ir.next = l.next
				}
				return ir.next()
			}
			pos++
			if c == '\n' {
				line++
			}
		}
	}
	return ir
}

// Next returns the next item, or io.EOF after the last one. After an error
// every call returns it again.
func (r *ItemReader) Next() (Item, error) {
	if r.err != nil {
		return nil, r.err
	}
	it, err := r.next()
	if err != nil {
		r.err = err
		return nil, err
	}
	r.count++
	return it, nil
}

// Count returns how many items Next has returned.
func (r *ItemReader) Count() int64 { return r.count }

// BytesRead returns how many bytes of the input the reader has consumed:
// at least up to the end of the last item, less than 64 KiB beyond it. It
// tells how far a long read has come.
func (r *ItemReader) BytesRead() int64 { return r.read() }

// lineReader reads JSON Lines.
//
// It reads with bufio.Reader.ReadSlice rather than a bufio.Scanner: a
// Scanner's default 64 KiB token limit is far below what one item may be.
type lineReader struct {
	br    *bufio.Reader
	line  int   // of the next line read
	pos   int64 // bytes consumed
	limit int
	buf   []byte
	eof   bool
}

func (l *lineReader) next() (Item, error) {
	for ; !l.eof; l.line++ {
		l.buf = l.buf[:0]
		var err error
		for {
			var frag []byte
			frag, err = l.br.ReadSlice('\n')
			l.pos += int64(len(frag))
			// The 2 leaves room for a "\r\n" line end, which is not part
			// of the item.
			if len(l.buf)+len(frag) > l.limit+2 {
				return nil, fmt.Errorf("items line %d: longer than the %s limit for one item", l.line, byteCount(l.limit))
			}
			l.buf = append(l.buf, frag...)
			if err != bufio.ErrBufferFull {
				break
			}
		}
		if err != nil && err != io.EOF {
			return nil, readError(err)
		}
		l.eof = err == io.EOF
		if v := trimSpace(l.buf); len(v) > 0 {
			if len(v) > l.limit {
				return nil, fmt.Errorf("items line %d: longer than the %s limit for one item", l.line, byteCount(l.limit))
			}
			item, cerr := compactItem(v)
			if cerr != nil {
				return nil, fmt.Errorf("items line %d: %w", l.line, cerr)
			}
			l.line++
			return item, nil
		}
	}
	return nil, io.EOF
}

// arrayReader reads items from one JSON array.
//
// It finds where each element ends itself, by counting brackets outside
// strings, instead of using a json.Decoder: that way it can stop an element
// at the item limit before buffering it whole, and name the element that is
// wrong. json.Compact then checks each element for real, so the bracket
// counting only has to find the end, not judge the syntax.
type arrayReader struct {
	br    *bufio.Reader
	pos   int64 // bytes consumed from the input, for error messages
	limit int
	i     int  // index of the next element
	done  bool // the closing bracket was read
}

// next returns the next element, checking the syntax around it: the
// opening bracket before the first, a comma between two, and nothing but
// space after the closing bracket.
func (a *arrayReader) next() (Item, error) {
	if a.done {
		return nil, io.EOF
	}
	if a.i == 0 {
		if _, err := a.readByte(); err != nil { // the '[' the reader saw
			return nil, readError(err)
		}
		c, err := a.skipSpace()
		if err != nil {
			return nil, a.endError(err)
		}
		if c == ']' {
			a.done = true
			if err := a.end(); err != nil {
				return nil, err
			}
			return nil, io.EOF
		}
		a.back()
	} else {
		c, err := a.skipSpace()
		if err != nil {
			return nil, a.endError(err)
		}
		switch c {
		case ',':
		case ']':
			a.done = true
			if err := a.end(); err != nil {
				return nil, err
			}
			return nil, io.EOF
		default:
			return nil, fmt.Errorf("items array (byte %d): expected ',' or ']' after items[%d], found %q", a.pos-1, a.i-1, c)
		}
	}
	i := a.i
	start, raw, err := a.value()
	if err != nil {
		return nil, fmt.Errorf("items[%d] (byte %d): %w", i, start, err)
	}
	item, err := compactItem(raw)
	if err != nil {
		return nil, fmt.Errorf("items[%d] (byte %d): %w", i, start, err)
	}
	a.i++
	return item, nil
}

// end checks that nothing but space follows the closing bracket: data after
// it is most likely a second array or a broken file, and silently ignoring
// it would drop items.
//
// Data on a later line is most likely JSON Lines whose first item happens
// to be an array, which the error then says, so that the person knows what
// to change.
func (a *arrayReader) end() error {
	newline := false
	for {
		c, err := a.readByte()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return readError(err)
		}
		if !isSpace(c) {
			break
		}
		newline = newline || c == '\n'
	}
	if newline {
		return fmt.Errorf("items array (byte %d): data after the closing ']'; "+
			"input that starts with '[' is read as one JSON array, so JSON Lines cannot start with an array item", a.pos-1)
	}
	return fmt.Errorf("items array (byte %d): data after the closing ']'", a.pos-1)
}

// endError reports input that stopped inside the array.
func (a *arrayReader) endError(err error) error {
	if err == io.EOF {
		return fmt.Errorf("items array (byte %d): the input ends before the closing ']'", a.pos)
	}
	return readError(err)
}

// value reads one element as written, returning the offset where it starts.
// It works on whole chunks of the reader's buffer rather than byte by byte,
// as an item may be tens of megabytes.
func (a *arrayReader) value() (int64, []byte, error) {
	c, err := a.skipSpace()
	if err != nil {
		return a.pos, nil, a.valueError(err)
	}
	start := a.pos - 1
	if c == ']' || c == ',' {
		return start, nil, fmt.Errorf("expected an item, found %q", c)
	}
	a.back()
	var (
		s   valueEnd
		buf []byte
	)
	for {
		if a.br.Buffered() == 0 {
			if _, err := a.br.Peek(1); err != nil {
				if err == io.EOF && s.scalar {
					return start, buf, nil // the caller reports the missing ']'
				}
				return start, nil, a.valueError(err)
			}
		}
		chunk, _ := a.br.Peek(a.br.Buffered()) // cannot fail: all buffered
		n := s.find(chunk)
		done := n >= 0
		if !done {
			n = len(chunk)
		}
		if len(buf)+n > a.limit {
			return start, nil, fmt.Errorf("longer than the %s limit for one item", byteCount(a.limit))
		}
		buf = append(buf, chunk[:n]...)
		_, _ = a.br.Discard(n) // cannot fail: n bytes are buffered
		a.pos += int64(n)
		if done {
			return start, buf, nil
		}
	}
}

// valueEnd finds where a JSON value ends, fed its text a chunk at a time.
type valueEnd struct {
	started  bool
	scalar   bool // a number, true, false or null (or garbage)
	depth    int  // of brackets and braces, outside strings
	inString bool
	escaped  bool // the last byte was a backslash in a string
}

// find returns the length of the part of p that belongs to the value, or -1
// if the value goes on after p.
func (s *valueEnd) find(p []byte) int {
	for i := 0; i < len(p); i++ {
		if s.inString && !s.escaped {
			// Strings are most of the bytes in most items: skip to the
			// next byte that matters in one call.
			j := bytes.IndexAny(p[i:], `"\\`)
			if j < 0 {
				return -1
			}
			i += j
		}
		c := p[i]
		switch {
		case !s.started:
			s.started = true
			switch c {
			case '"':
				s.inString = true
			case '[', '{':
				s.depth = 1
			default:
				s.scalar = true
			}
		case s.scalar:
			// A scalar ends where the array's own syntax resumes.
			if isSpace(c) || c == ',' || c == ']' || c == '}' {
				return i
			}
		case s.escaped:
			s.escaped = false
		case s.inString:
			if c == '\\' {
				s.escaped = true
			} else if c == '"' {
				s.inString = false
				if s.depth == 0 {
					return i + 1
				}
			}
		case c == '"':
			s.inString = true
		case c == '[' || c == '{':
			s.depth++
		case c == ']' || c == '}':
			if s.depth--; s.depth == 0 {
				return i + 1
			}
		}
	}
	return -1
}

func (a *arrayReader) valueError(err error) error {
	if err == io.EOF {
		return errors.New("the input ends inside the item")
	}
	return readError(err)
}

func (a *arrayReader) readByte() (byte, error) {
	c, err := a.br.ReadByte()
	if err == nil {
		a.pos++
	}
	return c, err
}

// back gives back the byte readByte just returned.
func (a *arrayReader) back() {
	_ = a.br.UnreadByte() // cannot fail right after ReadByte
	a.pos--
}

// skipSpace returns the next byte that is not JSON space.
func (a *arrayReader) skipSpace() (byte, error) {
	for {
		c, err := a.readByte()
		if err != nil || !isSpace(c) {
			return c, err
		}
	}
}

// compactItem checks one item and returns it compacted, in its own memory.
//
// encoding/json does not check that strings are valid UTF-8 (it quietly
// replaces bad bytes when decoding), so that is checked here: a job in
// another language would reject such an item, better to say so up front.
func compactItem(v []byte) (Item, error) {
	if !utf8.Valid(v) {
		return nil, errors.New("invalid UTF-8")
	}
	var b bytes.Buffer
	b.Grow(len(v))
	if err := json.Compact(&b, v); err != nil {
		return nil, fmt.Errorf("invalid JSON: %w", err)
	}
	return b.Bytes(), nil
}

func readError(err error) error {
	return fmt.Errorf("reading items: %w", err)
}

// isSpace reports whether c is JSON white space. It is narrower than
// unicode.IsSpace on purpose: a form feed or a no-break space is not
// something JSON allows, so it should be reported, not skipped.
func isSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\r'
}

func trimSpace(b []byte) []byte {
	return bytes.Trim(b, " \t\r\n")
}

// byteCount writes n for a person: "64 MiB" rather than "67108864 bytes".
func byteCount(n int) string {
	switch {
	case n >= 1<<30 && n%(1<<30) == 0:
		return fmt.Sprintf("%d GiB", n>>30)
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", n>>20)
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%d KiB", n>>10)
	}
	return fmt.Sprintf("%d bytes", n)
}
