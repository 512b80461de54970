package pgstore

import (
	"slices"
	"strings"
	"testing"
)

// Notes go many to a notification, none over PostgreSQL's payload limit,
// and come out as they went in, whatever they hold.
func TestPackRoundTrip(t *testing.T) {
	var notes []string
	for i := range 500 {
		notes = append(notes, "job:"+strings.Repeat("x", i%40)+":7 12\n"+string(rune('a'+i%26)))
	}
	packed := pack(notes)
	if len(packed) >= len(notes)/10 {
		t.Fatalf("500 notes went in %d notifications, want far fewer", len(packed))
	}
	var got []string
	for _, p := range packed {
		if len(p) > packMax {
			t.Fatalf("a notification of %d bytes, over %d", len(p), packMax)
		}
		got = append(got, unpack(p)...)
	}
	if !slices.Equal(got, notes) {
		t.Fatalf("unpacked notes differ from those packed")
	}
	if got := pack([]string{"job:a"}); !slices.Equal(got, []string{"job:a"}) {
		t.Fatalf("a lone note went as %q", got)
	}
	big := strings.Repeat("y", packMax)
	if got := pack([]string{"job:a", big, "job:b"}); len(got) != 3 || got[1] != big {
		t.Fatalf("a note too big to pack with others: %q…", got)
	}
}

// A pack that cannot be read yields the notes before the fault, and an
// unpacked note (from a server that sent it alone) is itself.
func TestUnpackDamaged(t *testing.T) {
	for payload, want := range map[string][]string{
		"job:a":               {"job:a"},
		"pack:5:job:a5:job:b": {"job:a", "job:b"},
		"pack:5:job:a9:job:b": {"job:a"},
		"pack:x:job:a":        nil,
		"pack:-1:":            nil,
		"pack:":               nil,
	} {
		if got := unpack(payload); !slices.Equal(got, want) {
			t.Errorf("unpack(%q) = %q, want %q", payload, got, want)
		}
	}
}

// FuzzUnpack: any payload unpacks without panicking into notes that, packed
// again and unpacked, are the same.
func FuzzUnpack(f *testing.F) {
	f.Add("pack:5:job:a5:job:b")
	f.Add("pack:99999999999999999999:")
	f.Add("job:a 3 4")
	f.Fuzz(func(t *testing.T, payload string) {
		notes := unpack(payload)
		var again []string
		for _, p := range pack(notes) {
			again = append(again, unpack(p)...)
		}
		if len(notes) > 0 && !slices.Equal(again, notes) {
			t.Fatalf("unpack(%q) = %q, which packs and unpacks to %q", payload, notes, again)
		}
	})
}
