package ingest_test

import (
	"slices"
	"testing"

	"github.com/spool-run/spool/internal/ingest"
)

func TestDedupe(t *testing.T) {
	ev := func(source, id, msg string) ingest.Event {
		return ingest.Event{Source: source, ID: id, Timestamp: t0, Message: msg}
	}
	in := []ingest.Event{
		ev("a", "1", "first"),
		ev("b", "1", "same id, other source"),
		ev("a", "2", "second"),
		ev("a", "1", "sent again, changed"),
		ev("a", "3", "third"),
		ev("b", "1", "again"),
	}
	orig := slices.Clone(in)
	got := ingest.Dedupe(in)
	checkEvents(t, got, []ingest.Event{
		ev("a", "1", "first"),
		ev("b", "1", "same id, other source"),
		ev("a", "2", "second"),
		ev("a", "3", "third"),
	})
	if !slices.Equal(in, orig) {
		t.Error("Dedupe changed its argument")
	}
	if got := ingest.Dedupe(nil); len(got) != 0 {
		t.Errorf("Dedupe(nil) = %v", got)
	}
}
