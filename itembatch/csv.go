package itembatch

import (
	"bufio"
	"bytes"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"unicode/utf8"
)

// ReadCSVItems reads items from CSV (RFC 4180, as encoding/csv reads it):
// the first row is a header naming the fields, and every row after it
// becomes one JSON object with those fields, in the header's order, e.g.
//
//	path,width          {"path":"a.jpg","width":"800"}
//	a.jpg,800      →    {"path":"b.jpg","width":"1024"}
//	b.jpg,1024
//
// Every value is a JSON string: CSV does not say whether 800 is a number or
// a text, and guessing would turn a zip code like 01234 into 1234. A job
// that wants numbers converts them (jq's tonumber, for one).
//
// Header names must be non-empty and different from each other. A row with
// more or fewer fields than the header, a stray quote, or invalid UTF-8 is an
// error naming its line, e.g. "items line 4: 3 fields, but the header on
// line 1 names 2". Blank lines are skipped, "\r\n" line ends and a UTF-8
// byte order mark at the start are accepted. One row may be up to 64 MiB as
// written (the same bound as ReadItems'); a longer one, such as a quoted
// field that never closes, is an error, not a read of everything that
// follows.
//
// Input with no rows after the header, or no input at all, gives no items
// and no error.
func ReadCSVItems(r io.Reader) ([]Item, error) {
	return readAll(newCSVItemReader(r, maxItemBytes))
}

// readCSVItems is ReadCSVItems with the row limit as a parameter, so that
// tests can cross it without allocating 64 MiB.
func readCSVItems(r io.Reader, limit int) ([]Item, error) {
	return readAll(newCSVItemReader(r, limit))
}

// NewCSVItemReader returns a reader of CSV items, a row at a time, as
// ReadCSVItems reads them.
func NewCSVItemReader(r io.Reader) *ItemReader {
	return newCSVItemReader(r, maxItemBytes)
}

func newCSVItemReader(r io.Reader, limit int) *ItemReader {
	c := &csvReader{limit: limit}
	c.br = bufio.NewReaderSize(r, 64<<10)
	return &ItemReader{next: c.next, read: func() int64 { return c.lr.read }}
}

// csvReader reads CSV items.
type csvReader struct {
	br    *bufio.Reader
	limit int
	lr    rowLimit
	cr    *csv.Reader
	keys  [][]byte
	// line is the header's line.
	line int
}

func (c *csvReader) next() (Item, error) {
	if c.cr == nil {
		if err := c.header(); err != nil {
			return nil, err
		}
	}
	lr, cr := &c.lr, c.cr
	lr.start = cr.InputOffset()
	row, err := cr.Read()
	if err == io.EOF {
		return nil, io.EOF
	}
	if err != nil {
		var pe *csv.ParseError
		if errors.As(err, &pe) && errors.Is(pe.Err, csv.ErrFieldCount) {
			return nil, fmt.Errorf("items line %d: %d fields, but the header on line %d names %d", pe.StartLine, len(row), c.line, len(c.keys))
		}
		return nil, csvError(err, lr)
	}
	item, err := csvItem(c.keys, row)
	if err != nil {
		l, _ := cr.FieldPos(0)
		return nil, fmt.Errorf("items line %d: %w", l, err)
	}
	lr.line = nextLine(cr, row)
	return item, nil
}

// header reads the header row and checks its names.
func (c *csvReader) header() error {
	if b, _ := c.br.Peek(len(bom)); string(b) == bom {
		_, _ = c.br.Discard(len(bom))
	}
	c.lr = rowLimit{r: c.br, limit: int64(c.limit), line: 1}
	c.cr = csv.NewReader(&c.lr)
	header, err := c.cr.Read()
	if err == io.EOF {
		return io.EOF
	}
	if err != nil {
		return csvError(err, &c.lr)
	}
	c.line, _ = c.cr.FieldPos(0)
	c.lr.line = nextLine(c.cr, header)
	c.keys, err = csvKeys(header, c.line)
	return err
}

// nextLine is the line after the row cr just read: where the next row
// starts, unless blank lines come first. A quoted field may hold line
// breaks, so it is counted from the row's last field.
func nextLine(cr *csv.Reader, row []string) int {
	last := len(row) - 1
	l, _ := cr.FieldPos(last)
	return l + strings.Count(row[last], "\n") + 1
}

// csvKeys checks the header's names and returns each as a JSON string.
func csvKeys(header []string, line int) ([][]byte, error) {
	keys := make([][]byte, len(header))
	seen := make(map[string]int, len(header))
	for i, name := range header {
		switch first, dup := seen[name]; {
		case name == "":
			return nil, fmt.Errorf("items line %d (the header): column %d has no name; name every column, the names become the items' fields", line, i+1)
		case dup:
			return nil, fmt.Errorf("items line %d (the header): columns %d and %d are both named %q; an item cannot have a field twice", line, first, i+1, name)
		}
		seen[name] = i + 1
		k, err := jsonString(name)
		if err != nil {
			return nil, fmt.Errorf("items line %d (the header): column %d: %w", line, i+1, err)
		}
		keys[i] = k
	}
	return keys, nil
}

// csvItem is one row as an object of strings, compact.
func csvItem(keys [][]byte, row []string) (Item, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, v := range row {
		if i > 0 {
			b.WriteByte(',')
		}
		s, err := jsonString(v)
		if err != nil {
			return nil, fmt.Errorf("column %d: %w", i+1, err)
		}
		b.Write(keys[i])
		b.WriteByte(':')
		b.Write(s)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// jsonString is s as a JSON string. Invalid UTF-8 is refused, as ReadItems
// refuses it: encoding/json would quietly replace the bytes. HTML
// characters are left as they are; escaping them is for JSON put in web
// pages, and a job would only see "\u003c" where the file had "<".
func jsonString(s string) ([]byte, error) {
	if !utf8.ValidString(s) {
		return nil, errors.New("invalid UTF-8")
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s) // a valid string always encodes
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}

// csvError says what is wrong where, in the words of the JSON readers.
func csvError(err error, lr *rowLimit) error {
	if errors.Is(err, errRowTooLong) {
		return fmt.Errorf("items from line %d on: a row longer than the %s limit for one item (a quoted field that never closes?)", lr.line, byteCount(int(lr.limit)))
	}
	var pe *csv.ParseError
	if errors.As(err, &pe) && (errors.Is(pe.Err, csv.ErrQuote) || errors.Is(pe.Err, csv.ErrBareQuote)) {
		where := fmt.Sprintf("items line %d, column %d", pe.Line, pe.Column)
		if pe.StartLine != pe.Line {
			where += fmt.Sprintf(" (in the row from line %d)", pe.StartLine)
		}
		return fmt.Errorf("%s: %v (quote a field that holds quotes, commas or line breaks, and double the quotes inside it)", where, pe.Err)
	}
	return readError(err)
}

// errRowTooLong stops the CSV reader in a row longer than the limit.
var errRowTooLong = errors.New("row too long")

// rowLimit bounds the bytes encoding/csv reads for one row. csv.Reader
// keeps a whole row in memory, and a quoted field that never closes makes
// the rest of the input one row: without a bound it would read the input
// to its end. The reader reads ahead of the row it parses by at most its
// buffer, so the bound is the limit plus that buffer, checked against the
// offset where the row started.
type rowLimit struct {
	r     io.Reader
	limit int64
	// read counts the bytes handed to csv; start is the offset of the row
	// it is reading; line is where that row starts (or blank lines before
	// it), for the error.
	read, start int64
	line        int
}

// csvReadAhead is how far ahead of its row csv.Reader may have read: the
// size of the buffer it wraps its input in.
const csvReadAhead = 4096

func (l *rowLimit) Read(p []byte) (int, error) {
	if l.read-l.start > l.limit+csvReadAhead {
		return 0, errRowTooLong
	}
	n, err := l.r.Read(p)
	l.read += int64(n)
	return n, err
}
