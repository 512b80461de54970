package itembatch

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"testing"
)

func mkItems(texts ...string) []Item {
	items := make([]Item, len(texts))
	for i, s := range texts {
		items[i] = Item(s)
	}
	return items
}

// layout writes batches as their JSON arrays, one string each.
func layout(batches []Batch) []string {
	out := make([]string, len(batches))
	for i, b := range batches {
		out[i] = string(b.JSON())
	}
	return out
}

func split(t *testing.T, items []Item, o Config) ([]string, []Warning) {
	t.Helper()
	batches, warnings, err := Split(items, o)
	if err != nil {
		t.Fatal(err)
	}
	for i, b := range batches {
		if got := len(b.JSON()); got != b.Size() {
			t.Errorf("batch %d: Size() = %d, len(JSON()) = %d", i, b.Size(), got)
		}
	}
	return layout(batches), warnings
}

func wantLayout(t *testing.T, got []string, want ...string) {
	t.Helper()
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("batches:\n got %s\nwant %s", strings.Join(got, " "), strings.Join(want, " "))
	}
}

func TestSplitByCount(t *testing.T) {
	items := mkItems("1", "2", "3", "4", "5", "6", "7")
	got, warnings := split(t, items, Config{MaxItems: 3})
	wantLayout(t, got, "[1,2,3]", "[4,5,6]", "[7]")
	if len(warnings) != 0 {
		t.Errorf("warnings: %q", warnings)
	}

	got, _ = split(t, items, Config{MaxItems: 1})
	wantLayout(t, got, "[1]", "[2]", "[3]", "[4]", "[5]", "[6]", "[7]")
	got, _ = split(t, items, Config{MaxItems: 7})
	wantLayout(t, got, "[1,2,3,4,5,6,7]")
	got, _ = split(t, items, Config{}) // no count limit, and all fits the default size
	wantLayout(t, got, "[1,2,3,4,5,6,7]")
}

// A batch whose array is exactly MaxBytes is allowed; one byte more closes
// it. The items are two bytes each, so n items make a 3n+1-byte array.
func TestSplitByBytesAtTheLimit(t *testing.T) {
	items := mkItems("10", "20", "30", "40", "50")
	for _, tc := range []struct {
		maxBytes int
		want     []string
	}{
		{16, []string{"[10,20,30,40,50]"}},                    // 16 bytes: exactly the limit
		{15, []string{"[10,20,30,40]", "[50]"}},               // 16 > 15: closes at 13
		{13, []string{"[10,20,30,40]", "[50]"}},               // exactly 13
		{12, []string{"[10,20,30]", "[40,50]"}},               // 13 > 12
		{4, []string{"[10]", "[20]", "[30]", "[40]", "[50]"}}, // [10] is exactly 4
	} {
		got, warnings := split(t, items, Config{MaxBytes: tc.maxBytes})
		wantLayout(t, got, tc.want...)
		if len(warnings) != 0 {
			t.Errorf("MaxBytes %d: warnings %q", tc.maxBytes, warnings)
		}
	}

	// Both limits: whichever is reached first closes the batch.
	got, _ := split(t, items, Config{MaxBytes: 13, MaxItems: 3})
	wantLayout(t, got, "[10,20,30]", "[40,50]")
	got, _ = split(t, items, Config{MaxBytes: 10, MaxItems: 4})
	wantLayout(t, got, "[10,20,30]", "[40,50]")
}

func TestSplitDefaultMaxBytes(t *testing.T) {
	// Three 100 KiB items do not fit 256 KiB; two do.
	big := `"` + strings.Repeat("x", 100<<10) + `"`
	items := mkItems(big, big, big, big, big)
	batches, _, err := Split(items, Config{})
	if err != nil {
		t.Fatal(err)
	}
	var sizes []int
	for _, b := range batches {
		sizes = append(sizes, len(b.Items))
		if b.Size() > DefaultMaxBytes {
			t.Errorf("batch of %d bytes, over DefaultMaxBytes", b.Size())
		}
	}
	if fmt.Sprint(sizes) != "[2 2 1]" {
		t.Errorf("batch sizes %v, want [2 2 1]", sizes)
	}
}

// An item too big for any batch travels alone, with a warning, and the
// items around it are batched before and after it.
func TestSplitOversizedItem(t *testing.T) {
	huge := `"` + strings.Repeat("h", 20) + `"` // 22 bytes, 24 as a batch
	items := mkItems("1", "2", huge, "3", "4", "5")
	got, warnings := split(t, items, Config{MaxBytes: 10})
	wantLayout(t, got, "[1,2]", "["+huge+"]", "[3,4,5]")
	if len(warnings) != 1 {
		t.Fatalf("warnings %q, want one", warnings)
	}
	for _, want := range []string{"item 2 ", "22 bytes", "24 bytes", "10-byte"} {
		if !strings.Contains(string(warnings[0]), want) {
			t.Errorf("warning %q does not say %q", warnings[0], want)
		}
	}

	// Two in a row, and one first: each alone, each named.
	items = mkItems(huge, huge, "1", huge)
	got, warnings = split(t, items, Config{MaxBytes: 10})
	wantLayout(t, got, "["+huge+"]", "["+huge+"]", "[1]", "["+huge+"]")
	if len(warnings) != 3 || !strings.HasPrefix(string(warnings[0]), "item 0 ") ||
		!strings.HasPrefix(string(warnings[1]), "item 1 ") || !strings.HasPrefix(string(warnings[2]), "item 3 ") {
		t.Errorf("warnings %q, want items 0, 1 and 3", warnings)
	}

	// An item whose one-item batch is exactly MaxBytes is not oversized.
	got, warnings = split(t, mkItems("1", huge, "2"), Config{MaxBytes: 24})
	wantLayout(t, got, "[1]", "["+huge+"]", "[2]")
	if len(warnings) != 0 {
		t.Errorf("warnings %q for an item that fits", warnings)
	}
}

func TestSplitGroupBy(t *testing.T) {
	t.Run("a group larger than a batch", func(t *testing.T) {
		items := mkItems(`{"g":"a","i":0}`, `{"g":"a","i":1}`, `{"g":"a","i":2}`, `{"g":"a","i":3}`, `{"g":"a","i":4}`)
		got, _ := split(t, items, Config{GroupBy: "g", MaxItems: 2})
		wantLayout(t, got,
			`[{"g":"a","i":0},{"g":"a","i":1}]`,
			`[{"g":"a","i":2},{"g":"a","i":3}]`,
			`[{"g":"a","i":4}]`)
	})

	t.Run("interleaved groups", func(t *testing.T) {
		items := mkItems(`{"g":"a","i":0}`, `{"g":"b","i":1}`, `{"g":"a","i":2}`, `{"g":"b","i":3}`,
			`{"g":"a","i":4}`, `{"g":"c","i":5}`, `{"g":"b","i":6}`)
		got, _ := split(t, items, Config{GroupBy: "g", MaxItems: 2})
		// Ordered by first item: 0, 1, 4, 5, 6.
		wantLayout(t, got,
			`[{"g":"a","i":0},{"g":"a","i":2}]`,
			`[{"g":"b","i":1},{"g":"b","i":3}]`,
			`[{"g":"a","i":4}]`,
			`[{"g":"c","i":5}]`,
			`[{"g":"b","i":6}]`)
	})

	t.Run("missing field and non-objects", func(t *testing.T) {
		items := mkItems(`{"g":"a"}`, `{"x":1}`, `5`, `[{"g":"a"}]`, `null`, `"g"`, `{"g":null}`,
			`{"G":"a"}`, `{"g":"a","i":1}`, `{}`)
		got, _ := split(t, items, Config{GroupBy: "g"})
		wantLayout(t, got,
			`[{"g":"a"},{"g":"a","i":1}]`,
			`[{"x":1},5,[{"g":"a"}],null,"g",{"G":"a"},{}]`, // "missing", not null
			`[{"g":null}]`)
	})

	t.Run("values by compact JSON text", func(t *testing.T) {
		items := mkItems(`{"g":1}`, `{"g":1.0}`, `{"g":"1"}`, `{"g":{"x":[1,2]}}`, `{"g":{"x":[1, 2]} }`, `{"g":1}`)
		got, _ := split(t, items, Config{GroupBy: "g"})
		wantLayout(t, got,
			`[{"g":1},{"g":1}]`,
			`[{"g":1.0}]`,
			`[{"g":"1"}]`,
			`[{"g":{"x":[1,2]}},{"g":{"x":[1, 2]} }]`)
	})

	t.Run("with a byte limit", func(t *testing.T) {
		items := mkItems(`{"g":1}`, `{"g":2}`, `{"g":1}`, `{"g":1}`, `{"g":2}`)
		// Two 7-byte items make a 17-byte batch.
		got, _ := split(t, items, Config{GroupBy: "g", MaxBytes: 17})
		wantLayout(t, got, `[{"g":1},{"g":1}]`, `[{"g":2},{"g":2}]`, `[{"g":1}]`)
	})
}

func TestSplitMaxItemsPerGroup(t *testing.T) {
	items := mkItems(`{"g":"a"}`, `{"g":"b"}`, `{"g":"a"}`, `{"g":"a"}`, `{"g":"b"}`, `{"g":"a"}`, `{"g":"a"}`)
	got, _ := split(t, items, Config{GroupBy: "g", MaxItemsPerGroup: 2})
	wantLayout(t, got, `[{"g":"a"},{"g":"a"}]`, `[{"g":"b"},{"g":"b"}]`, `[{"g":"a"},{"g":"a"}]`, `[{"g":"a"}]`)

	// With MaxItems too, the smaller limit wins.
	got, _ = split(t, items, Config{GroupBy: "g", MaxItemsPerGroup: 2, MaxItems: 3})
	wantLayout(t, got, `[{"g":"a"},{"g":"a"}]`, `[{"g":"b"},{"g":"b"}]`, `[{"g":"a"},{"g":"a"}]`, `[{"g":"a"}]`)
	got, _ = split(t, items, Config{GroupBy: "g", MaxItemsPerGroup: 3, MaxItems: 1})
	if len(got) != len(items) {
		t.Errorf("MaxItems 1: %d batches, want %d", len(got), len(items))
	}
}

func TestSplitEmpty(t *testing.T) {
	for _, items := range [][]Item{nil, {}} {
		batches, warnings, err := Split(items, Config{MaxItems: 3, GroupBy: "g"})
		if batches != nil || warnings != nil || err != nil {
			t.Errorf("Split(%v) = %v, %v, %v; want nothing", items, batches, warnings, err)
		}
	}
}

func TestSplitInvalidConfig(t *testing.T) {
	for _, o := range []Config{
		{MaxItems: -1},
		{MaxBytes: -1},
		{MaxBytes: 1},
		{GroupBy: "g", MaxItemsPerGroup: -1},
		{MaxItemsPerGroup: 2},
	} {
		// Checked even without items: the options are wrong either way.
		for _, items := range [][]Item{nil, mkItems("1")} {
			batches, _, err := Split(items, o)
			if !errors.Is(err, ErrInvalidConfig) || batches != nil {
				t.Errorf("Split(%+v) = %v, %v; want ErrInvalidConfig", o, batches, err)
			}
		}
	}
	// The smallest MaxBytes: every item is oversized, none is lost.
	got, warnings := split(t, mkItems("1", "2"), Config{MaxBytes: 2})
	wantLayout(t, got, "[1]", "[2]")
	if len(warnings) != 2 {
		t.Errorf("warnings %q, want 2", warnings)
	}
}

func TestBatchJSON(t *testing.T) {
	for _, tc := range []struct {
		items []Item
		want  string
	}{
		{nil, "[]"},
		{mkItems(`{"a":1}`), `[{"a":1}]`},
		{mkItems(`1`, `"x"`, `[]`), `[1,"x",[]]`},
	} {
		b := Batch{Items: tc.items}
		if got := string(b.JSON()); got != tc.want {
			t.Errorf("JSON() = %s, want %s", got, tc.want)
		}
		if b.Size() != len(tc.want) {
			t.Errorf("Size() = %d, want %d", b.Size(), len(tc.want))
		}
	}
}

// fuzzItem describes one generated item: its text and its group ("" for
// the group of "missing").
type fuzzItem struct {
	text, group string
}

// fuzzItems turns bytes into items, each unique (it carries its index) so
// that the output can be traced back to the input. A byte picks the kind of
// item, its group and its padding, so the fuzzer can explore sizes and
// groupings.
func fuzzItems(data []byte) []fuzzItem {
	if len(data) > 300 {
		data = data[:300]
	}
	groups := []string{`"a"`, `"b"`, `1`, `null`, `{"k":[1]}`}
	items := make([]fuzzItem, len(data))
	for i, b := range data {
		pad := strings.Repeat("p", int(b)*7%90)
		switch b % 8 {
		case 0:
			items[i] = fuzzItem{fmt.Sprint(i), ""}
		case 1:
			items[i] = fuzzItem{fmt.Sprintf(`[%d,%q]`, i, pad), ""}
		case 2:
			items[i] = fuzzItem{fmt.Sprintf(`{"i":%d,"p":%q}`, i, pad), ""}
		default:
			g := groups[int(b>>3)%len(groups)]
			items[i] = fuzzItem{fmt.Sprintf(`{"i":%d,"g":%s,"p":%q}`, i, g, pad), g}
		}
	}
	return items
}

func FuzzSplit(f *testing.F) {
	f.Add([]byte{}, uint8(0), uint16(0), uint8(0), false)
	f.Add([]byte("abcdefgh"), uint8(3), uint16(0), uint8(0), false)
	f.Add([]byte("\x03\x0b\x13\x03\x1b\x00\x01\x02\x23\x03"), uint8(3), uint16(60), uint8(2), true)
	f.Add([]byte("\xff\x07\xf7\x00\x10"), uint8(0), uint16(90), uint8(0), true)
	f.Add([]byte("zzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzz"), uint8(5), uint16(1), uint8(4), true)
	f.Fuzz(func(t *testing.T, data []byte, maxItems uint8, maxBytes uint16, perGroup uint8, groupBy bool) {
		gen := fuzzItems(data)
		o := fuzzConfig(maxItems, maxBytes, perGroup, groupBy)
		items := make([]Item, len(gen))
		index := map[string]int{}
		for i, g := range gen {
			items[i] = Item(g.text)
			index[g.text] = i
		}
		group := func(i int) string {
			if groupBy {
				return gen[i].group
			}
			return ""
		}

		batches, warnings, err := Split(items, o)
		if err != nil {
			t.Fatal(err)
		}
		limit := o.MaxBytes
		if limit == 0 {
			limit = DefaultMaxBytes
		}
		oversized := func(b Batch) bool { return len(b.Items) == 1 && b.Size() > limit }

		seen := make([]bool, len(items))
		byGroup := map[string][]int{} // input indexes, in output order
		lastFirst := -1
		nOversized := 0
		for bi, b := range batches {
			if len(b.Items) == 0 {
				t.Fatalf("batch %d is empty", bi)
			}
			js := b.JSON()
			var back []json.RawMessage
			if err := json.Unmarshal(js, &back); err != nil || len(back) != len(b.Items) || len(js) != b.Size() {
				t.Fatalf("batch %d: JSON %s does not match its %d items and size %d", bi, js, len(b.Items), b.Size())
			}
			if oversized(b) {
				nOversized++
				i := index[string(b.Items[0])]
				found := false
				for _, w := range warnings {
					found = found || strings.HasPrefix(string(w), fmt.Sprintf("item %d ", i))
				}
				if !found {
					t.Fatalf("oversized item %d has no warning in %q", i, warnings)
				}
			} else {
				if b.Size() > limit {
					t.Fatalf("batch %d is %d bytes, over %d", bi, b.Size(), limit)
				}
				if o.MaxItems > 0 && len(b.Items) > o.MaxItems {
					t.Fatalf("batch %d has %d items, over %d", bi, len(b.Items), o.MaxItems)
				}
				if o.MaxItemsPerGroup > 0 && len(b.Items) > o.MaxItemsPerGroup {
					t.Fatalf("batch %d has %d items of one group, over %d", bi, len(b.Items), o.MaxItemsPerGroup)
				}
			}
			first := index[string(b.Items[0])]
			if first <= lastFirst {
				t.Fatalf("batch %d starts at item %d, not after the previous batch's %d", bi, first, lastFirst)
			}
			lastFirst = first
			g := group(first)
			for _, it := range b.Items {
				i, ok := index[string(it)]
				if !ok || seen[i] {
					t.Fatalf("batch %d: item %s unknown or seen twice", bi, it)
				}
				seen[i] = true
				if group(i) != g {
					t.Fatalf("batch %d mixes groups %q and %q", bi, g, group(i))
				}
				byGroup[g] = append(byGroup[g], i)
			}
		}
		for i, s := range seen {
			if !s {
				t.Fatalf("item %d is in no batch", i)
			}
		}
		if nOversized != len(warnings) {
			t.Fatalf("%d oversized batches but %d warnings", nOversized, len(warnings))
		}
		// Within a group, output order is input order.
		for g, idx := range byGroup {
			for k := 1; k < len(idx); k++ {
				if idx[k] <= idx[k-1] {
					t.Fatalf("group %q: item %d comes after item %d", g, idx[k], idx[k-1])
				}
			}
		}
		// Greedy: a batch closed only because the next item of its group
		// did not fit (or was oversized, or it was).
		lastOf := map[string]Batch{}
		for _, b := range batches {
			g := group(index[string(b.Items[0])])
			prev, ok := lastOf[g]
			lastOf[g] = b
			if !ok || oversized(prev) || oversized(b) {
				continue
			}
			n := len(prev.Items) + 1
			grown := Batch{Items: append(append([]Item{}, prev.Items...), b.Items[0])}
			if grown.Size() <= limit && (o.MaxItems == 0 || n <= o.MaxItems) && (o.MaxItemsPerGroup == 0 || n <= o.MaxItemsPerGroup) {
				t.Fatalf("batch %s closed though %s fit in it", prev.JSON(), b.Items[0])
			}
		}
	})
}

// FuzzSplitter: items cut as they come make the batches Split makes: the
// same ones in the same order without groups, the same ones in the order
// they close with them; the Splitter holds only the batches still open.
func FuzzSplitter(f *testing.F) {
	f.Add([]byte{}, uint8(0), uint16(0), uint8(0), false)
	f.Add([]byte("abcdefgh"), uint8(3), uint16(0), uint8(0), false)
	f.Add([]byte("\x03\x0b\x13\x03\x1b\x00\x01\x02\x23\x03"), uint8(3), uint16(60), uint8(2), true)
	f.Add([]byte("zzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzz"), uint8(5), uint16(1), uint8(4), true)
	f.Fuzz(func(t *testing.T, data []byte, maxItems uint8, maxBytes uint16, perGroup uint8, groupBy bool) {
		gen := fuzzItems(data)
		o := fuzzConfig(maxItems, maxBytes, perGroup, groupBy)
		items := make([]Item, len(gen))
		for i, g := range gen {
			items[i] = Item(g.text)
		}
		want, wantWarnings, err := Split(items, o)
		if err != nil {
			t.Fatal(err)
		}
		sp, err := NewSplitter(o)
		if err != nil {
			t.Fatal(err)
		}
		var (
			got      []Batch
			warnings []Warning
		)
		for _, it := range items {
			bs, ws := sp.Add(it)
			got = append(got, bs...)
			warnings = append(warnings, ws...)
			open := 0
			for _, b := range sp.open {
				open += b.size
			}
			if sp.OpenBytes() != open {
				t.Fatalf("OpenBytes %d, the open batches hold %d", sp.OpenBytes(), open)
			}
		}
		got = append(got, sp.Flush()...)
		if sp.OpenBytes() != 0 || len(sp.open) != 0 {
			t.Fatalf("after Flush, %d bytes in %d batches are still open", sp.OpenBytes(), len(sp.open))
		}
		if !slices.Equal(warnings, wantWarnings) {
			t.Fatalf("warnings %q, Split's %q", warnings, wantWarnings)
		}
		key := func(bs []Batch) []string {
			out := make([]string, len(bs))
			for i, b := range bs {
				out[i] = string(b.JSON())
			}
			return out
		}
		g, w := key(got), key(want)
		if groupBy {
			slices.Sort(g)
			slices.Sort(w)
		}
		if !slices.Equal(g, w) {
			t.Fatalf("the Splitter cut %q, Split %q", g, w)
		}
	})
}

// FuzzItemReader: reading items one at a time gives what ReadItems and
// ReadCSVItems give, error included, and counts what it read.
func FuzzItemReader(f *testing.F) {
	for _, s := range []string{"", "1\n2\n", "[1,2]", "[1,", "a,b\n1,2\n", "\ufeff[1] x", "{\"a\":1}\n\n{oops\n"} {
		f.Add([]byte(s), false)
		f.Add([]byte(s), true)
	}
	f.Fuzz(func(t *testing.T, data []byte, csv bool) {
		read, stream := ReadItems, NewItemReader
		if csv {
			read, stream = ReadCSVItems, NewCSVItemReader
		}
		want, wantErr := read(bytes.NewReader(data))
		r := stream(bytes.NewReader(data))
		var (
			got  []Item
			err  error
			last int64
		)
		for {
			var it Item
			it, err = r.Next()
			if err != nil {
				break
			}
			got = append(got, it)
			if r.BytesRead() < last || r.BytesRead() > int64(len(data)) {
				t.Fatalf("BytesRead went from %d to %d of %d", last, r.BytesRead(), len(data))
			}
			last = r.BytesRead()
		}
		if _, again := r.Next(); again != err {
			t.Fatalf("Next after %v: %v", err, again)
		}
		if wantErr != nil {
			if err == io.EOF || err.Error() != wantErr.Error() {
				t.Fatalf("read one at a time: %v; at once: %v", err, wantErr)
			}
			return
		}
		if err != io.EOF {
			t.Fatalf("read one at a time: %v; at once: no error", err)
		}
		if r.Count() != int64(len(want)) {
			t.Fatalf("Count %d, want %d", r.Count(), len(want))
		}
		equalTexts(t, got, texts(want)...)
	})
}

// fuzzConfig is the cut a fuzzer's numbers stand for: small bounds, so
// that a few items already make several batches.
func fuzzConfig(maxItems uint8, maxBytes uint16, perGroup uint8, groupBy bool) Config {
	o := Config{MaxItems: int(maxItems) % 9}
	if maxBytes != 0 {
		o.MaxBytes = 2 + int(maxBytes)%400
	}
	if groupBy {
		o.GroupBy = "g"
		o.MaxItemsPerGroup = int(perGroup) % 5
	}
	return o
}
