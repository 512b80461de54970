package outbox

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	spoolv1 "github.com/spool-run/spool/gen/spool/v1"
)

// names lists root's files.
func names(t *testing.T, root string) []string {
	t.Helper()
	entries, err := os.ReadDir(root)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range entries {
		out = append(out, e.Name())
	}
	return out
}

// writeAndRemove makes an outbox of h with spares, writes an event and
// its result, reads them back and removes it; it returns the file its
// segment was.
func writeAndRemove(t *testing.T, s *Spares, h Header, text string) os.FileInfo {
	t.Helper()
	o, err := s.Create(h)
	if err != nil {
		t.Fatal(err)
	}
	if err := o.Append(ev(1, text)); err != nil {
		t.Fatal(err)
	}
	if err := o.Finish(&spoolv1.JobResult{ExitCode: 3}); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(o.segPath(1))
	if err != nil {
		t.Fatal(err)
	}
	if seqs, res := drain(t, o, 10); len(seqs) != 1 || res.GetExitCode() != 3 {
		t.Fatalf("read %v, result %v", seqs, res)
	}
	if err := o.Remove(); err != nil {
		t.Fatal(err)
	}
	return fi
}

func TestSparesReuseRemovedSegments(t *testing.T) {
	root := t.TempDir()
	s := NewSpares(root, 2)
	first := writeAndRemove(t, s, header(), "the first job's secret line")

	// What a removed outbox leaves is one empty spare, which List does not
	// take for an outbox.
	left := names(t, root)
	if len(left) != 1 || !strings.HasPrefix(left[0], sparePrefix) {
		t.Fatalf("removed outbox left %v, want one spare", left)
	}
	if fi, err := os.Stat(filepath.Join(root, left[0])); err != nil || fi.Size() != 0 {
		t.Fatalf("spare: %v, %v; want an empty file", fi, err)
	}
	if paths, err := List(root); err != nil || len(paths) != 0 {
		t.Fatalf("List = %v, %v; want no outbox", paths, err)
	}

	// The next outbox's segment is that file, and holds only its own.
	h := header()
	h.JobID = "job2"
	o, err := s.Create(h)
	if err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(o.segPath(1))
	if err != nil {
		t.Fatal(err)
	}
	if !os.SameFile(first, fi) {
		t.Fatal("the second outbox's segment is a new file, not the spare")
	}
	if err := o.Append(ev(1, "second")); err != nil {
		t.Fatal(err)
	}
	if err := o.Close(); err != nil {
		t.Fatal(err)
	}
	if slices.ContainsFunc(names(t, root), func(n string) bool { return strings.HasPrefix(n, sparePrefix) }) {
		t.Fatal("the spare is still kept after it was used")
	}
	r, err := Open(o.path)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if r.Header().JobID != "job2" {
		t.Fatalf("reopened outbox is %q's", r.Header().JobID)
	}
	b, err := os.ReadFile(r.segPath(1))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(b), "secret") {
		t.Fatal("the reused segment still holds the first job's output")
	}
}

func TestSparesBounded(t *testing.T) {
	root := t.TempDir()
	s := NewSpares(root, 1)
	var outboxes []*Outbox
	for i := range 3 {
		h := header()
		h.JobID = "job" + string(rune('a'+i))
		o, err := s.Create(h)
		if err != nil {
			t.Fatal(err)
		}
		if err := o.Append(ev(1, "x")); err != nil {
			t.Fatal(err)
		}
		outboxes = append(outboxes, o)
	}
	for _, o := range outboxes {
		if err := o.Remove(); err != nil {
			t.Fatal(err)
		}
	}
	if left := names(t, root); len(left) != 1 {
		t.Fatalf("three outboxes removed with room for one spare left %v", left)
	}
	s.Drop()
	if left := names(t, root); len(left) != 0 {
		t.Fatalf("Drop left %v", left)
	}
}

func TestNewSparesRemovesLeftSpares(t *testing.T) {
	root := t.TempDir()
	for _, name := range []string{sparePrefix + "7", sparePrefix + "8"} {
		if err := os.WriteFile(filepath.Join(root, name), nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	// A worker's outbox beside them is not a spare and stays.
	o, err := Create(root, header())
	if err != nil {
		t.Fatal(err)
	}
	if err := o.Append(ev(1, "kept")); err != nil {
		t.Fatal(err)
	}
	if err := o.Close(); err != nil {
		t.Fatal(err)
	}
	NewSpares(root, 4)
	if left := names(t, root); len(left) != 1 || strings.HasPrefix(left[0], sparePrefix) {
		t.Fatalf("after NewSpares: %v, want only the outbox", left)
	}
}

func TestSparesAcrossSegments(t *testing.T) {
	root := t.TempDir()
	s := NewSpares(root, 8)
	o, err := s.Create(header())
	if err != nil {
		t.Fatal(err)
	}
	o.segBytes = 200
	for i := int64(1); i <= 30; i++ {
		if err := o.Append(ev(i, "some output line")); err != nil {
			t.Fatal(err)
		}
	}
	if err := o.Finish(&spoolv1.JobResult{}); err != nil {
		t.Fatal(err)
	}
	if seqs, _ := drain(t, o, 4); len(seqs) != 30 {
		t.Fatalf("read %d events, want 30", len(seqs))
	}
	if err := o.Remove(); err != nil {
		t.Fatal(err)
	}
	// Segments read and acknowledged became spares as they went, up to
	// the room there is; none of them is left as a segment.
	left := names(t, root)
	if len(left) == 0 || len(left) > 8 {
		t.Fatalf("left %v, want 1 to 8 spares", left)
	}
	for _, n := range left {
		if !strings.HasPrefix(n, sparePrefix) {
			t.Fatalf("left %s", n)
		}
	}
}
