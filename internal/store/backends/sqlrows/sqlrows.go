// Package sqlrows is what the two SQL stores (sqlitestore and pgstore) share:
// how a job and a key are laid out in columns, read back and settled, the
// listing query, and how an ingest is decided and its accepted events kept.
// The stores differ in how they run SQL (database/sql on one connection,
// pgx on a pool), not in what they keep, so the columns and their meaning
// are written once here.
//
// Statements here use ? placeholders; Dollar turns them into PostgreSQL's
// $1, $2, ….
package sqlrows

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"google.golang.org/protobuf/proto"
)

// Scanner is a row being read: *sql.Row, *sql.Rows, pgx.Row and pgx.Rows.
type Scanner interface{ Scan(dest ...any) error }

// Marshal encodes one of spool's own messages, which always encode.
func Marshal(m proto.Message) []byte {
	b, _ := proto.MarshalOptions{Deterministic: true}.Marshal(m)
	return b
}

// NullIfEmpty stores "" as NULL (request ids: the unique index then ignores
// jobs that gave none).
func NullIfEmpty(s string) any {
	if s == "" {
		return nil
	}
	return s
}

// Micros is t as stored: Unix microseconds.
func Micros(t time.Time) int64 { return t.UnixMicro() }

// Dollar rewrites a statement's ? placeholders as $1, $2, … for PostgreSQL.
// The statements here never hold a ? inside a string literal.
func Dollar(q string) string {
	var b strings.Builder
	b.Grow(len(q) + 16)
	n := 0
	for _, c := range q {
		if c == '?' {
			n++
			b.WriteByte('$')
			b.WriteString(strconv.Itoa(n))
			continue
		}
		b.WriteRune(c)
	}
	return b.String()
}

// corrupt names a column that would not decode.
func corrupt(kind, id, what string, err error) error {
	return fmt.Errorf("%s %s: corrupt %s: %w", kind, id, what, err)
}
