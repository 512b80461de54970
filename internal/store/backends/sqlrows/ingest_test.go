package sqlrows_test

import (
	"testing"

	"github.com/spool-run/spool/internal/store"
	"github.com/spool-run/spool/internal/store/backends/sqlrows"
)

// AcceptedPages reads a job's accepted events a page at a time, each page
// after the last line of the one before, and stops after a short page or
// when the consumer stops.
func TestAcceptedPages(t *testing.T) {
	const n = 2*sqlrows.AcceptedPageSize + 500
	var stored []store.Accepted
	for line := int64(1); len(stored) < n; line += 3 { // three lines each
		stored = append(stored, store.Accepted{Line: line, Lines: 3})
	}
	queries := 0
	fetch := func(after int64, limit int) ([]store.Accepted, error) {
		queries++
		var page []store.Accepted
		for _, a := range stored {
			if a.Line > after && len(page) < limit {
				page = append(page, a)
			}
		}
		return page, nil
	}
	var got []int64
	sqlrows.AcceptedPages(fetch, func(a store.Accepted, err error) bool {
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, a.Line)
		return true
	})
	if len(got) != n || queries != 3 {
		t.Fatalf("read %d events in %d queries, want %d in 3", len(got), queries, n)
	}
	for i, line := range got {
		if line != stored[i].Line {
			t.Fatalf("event %d is on line %d, want %d", i, line, stored[i].Line)
		}
	}
	queries, got = 0, nil
	sqlrows.AcceptedPages(fetch, func(a store.Accepted, err error) bool {
		got = append(got, a.Line)
		return len(got) < 10
	})
	if len(got) != 10 || queries != 1 {
		t.Fatalf("a consumer that stopped after 10 events got %d, in %d queries", len(got), queries)
	}
}
