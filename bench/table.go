package main

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"time"
)

// A table is one of the tables a run prints. It prints each row as it is
// measured, for the person watching, and keeps the rows so that -docs can
// write the whole table into the documentation: the figures people read in
// docs/ are the ones a run printed, never typed by hand.
type table struct {
	id      string
	widths  []int // the terminal's column widths; the last column is not padded
	rows    [][]string
	command string
}

// tables are the tables this run measured, in the order they began.
var tables []*table

// newTable starts the table id with the given header, printed at once.
// widths are the terminal's column widths (negative: left-aligned, as
// fmt's %-Ns). command is how a reader reproduces the table.
func newTable(id, command string, widths []int, header ...string) *table {
	t := &table{id: id, widths: widths, command: command}
	tables = append(tables, t)
	t.row(header...)
	return t
}

// row prints a row and keeps it.
func (t *table) row(cells ...string) {
	t.rows = append(t.rows, cells)
	var b strings.Builder
	for i, c := range cells {
		if i < len(cells)-1 && i < len(t.widths) {
			fmt.Fprintf(&b, "%*s ", t.widths[i], c)
		} else {
			b.WriteString(c)
		}
	}
	fmt.Println(strings.TrimRight(b.String(), " "))
}

// markdown is the table as docs/ show it, with the line that says where
// and how it was measured.
func (t *table) markdown(when time.Time) string {
	var b strings.Builder
	for i, r := range t.rows {
		b.WriteString("|")
		for _, c := range r {
			b.WriteString(" " + strings.ReplaceAll(c, "|", `\|`) + " |")
		}
		b.WriteString("\n")
		if i == 0 {
			b.WriteString("|" + strings.Repeat("---|", len(r)) + "\n")
		}
	}
	fmt.Fprintf(&b, "\nMeasured by `%s` on %s, %d CPUs, %s.\n", t.command, when.Format("2006-01-02"), runtime.NumCPU(), runtime.Version())
	return b.String()
}

// The marks around a table in a page of docs/. What lies between them is
// replaced by the table a run measured.
func beginMark(id string) string {
	return "<!-- bench:" + id + " begin: written by the command below it; edit bench/, not this table -->"
}
func endMark(id string) string { return "<!-- bench:" + id + " end -->" }

// errNoMarks says a page has no place for a table.
var errNoMarks = errors.New("no marks for the table")

// replaceTable puts body between id's marks in page.
func replaceTable(page []byte, id, body string) ([]byte, error) {
	begin, end := []byte(beginMark(id)), []byte(endMark(id))
	i := bytes.Index(page, begin)
	if i < 0 {
		return nil, errNoMarks
	}
	rest := page[i+len(begin):]
	j := bytes.Index(rest, end)
	if j < 0 {
		return nil, fmt.Errorf("bench:%s begins but never ends", id)
	}
	var out bytes.Buffer
	out.Write(page[:i+len(begin)])
	out.WriteString("\n" + body)
	out.Write(rest[j:])
	return out.Bytes(), nil
}

// writeDocs writes every table this run measured into the page of dir that
// has its marks. A table no page has a place for is an error: someone
// added a table without saying where it is shown.
func writeDocs(dir string, when time.Time) error {
	pages, err := filepath.Glob(filepath.Join(dir, "*.md"))
	if err != nil {
		return err
	}
	for _, t := range tables {
		written := false
		for _, p := range pages {
			page, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			out, err := replaceTable(page, t.id, t.markdown(when))
			if errors.Is(err, errNoMarks) {
				continue
			}
			if err != nil {
				return fmt.Errorf("%s: %w", p, err)
			}
			if err := os.WriteFile(p, out, 0o644); err != nil {
				return err
			}
			fmt.Fprintf(os.Stderr, "bench: wrote the %s table into %s\n", t.id, p)
			written = true
		}
		if !written {
			return fmt.Errorf("no page in %s has a place for the %s table (%s)", dir, t.id, beginMark(t.id))
		}
	}
	return nil
}
