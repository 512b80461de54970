package itembatch

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"testing"
	"testing/iotest"
	"unicode/utf8"
)

// texts returns items as strings, which compare and print better.
func texts(items []Item) []string {
	out := make([]string, len(items))
	for i, it := range items {
		out[i] = string(it)
	}
	return out
}

func equalTexts(t *testing.T, got []Item, want ...string) {
	t.Helper()
	g := texts(got)
	if len(g) != len(want) {
		t.Fatalf("got %d items %q, want %d %q", len(g), g, len(want), want)
	}
	for i := range want {
		if g[i] != want[i] {
			t.Errorf("item %d = %q, want %q", i, g[i], want[i])
		}
	}
}

func TestReadItemsJSONLines(t *testing.T) {
	// Blank lines (also at the start, and made of spaces), CRLF line ends,
	// nested arrays, an escaped newline inside a string, space to compact,
	// and a last line without its newline.
	in := "\n\r\n{\"a\": 1,  \"b\" : [ 1, [2, [3]] ]}\r\n" +
		"   \n" +
		"  [1, [2, [ 3 ] ] ]  \n" +
		"\"line\\nbreak, and a ] and a [\"\r\n" +
		"\n" +
		"42\n" +
		"\ttrue"
	items, err := ReadItems(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	equalTexts(t, items,
		`{"a":1,"b":[1,[2,[3]]]}`,
		`[1,[2,[3]]]`,
		`"line\nbreak, and a ] and a ["`,
		`42`,
		`true`,
	)
}

func TestReadItemsArray(t *testing.T) {
	in := " \r\n [ {\"a\" : 1},\n [1,[2, []]] , \"x\\n]\\\"[{\" ,\r\n1.5e3, null,{}, \"\"\n]  \n"
	items, err := ReadItems(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	equalTexts(t, items,
		`{"a":1}`,
		`[1,[2,[]]]`,
		`"x\n]\"[{"`,
		`1.5e3`,
		`null`,
		`{}`,
		`""`,
	)
}

func TestReadItemsByteOrderMark(t *testing.T) {
	for _, in := range []string{"\ufeff1\n2\n", "\ufeff[1,2]", "\ufeff \n[1, 2]"} {
		items, err := ReadItems(strings.NewReader(in))
		if err != nil {
			t.Fatalf("ReadItems(%q): %v", in, err)
		}
		equalTexts(t, items, "1", "2")
	}
	// Only at the start.
	if _, err := ReadItems(strings.NewReader("1\n\ufeff2\n")); err == nil || !strings.Contains(err.Error(), "items line 2") {
		t.Errorf("a byte order mark on line 2: %v, want an error", err)
	}
	_, err := ReadItems(strings.NewReader("\ufeff[1,]"))
	if err == nil || !strings.Contains(err.Error(), "items[1] (byte 6)") {
		t.Errorf("offsets after a byte order mark: %v, want byte 6", err)
	}
}

func TestReadItemsEmpty(t *testing.T) {
	for _, in := range []string{"", " ", "\n\n", " \r\n\t\n", "[]", " [ \n ] \n"} {
		items, err := ReadItems(strings.NewReader(in))
		if err != nil || len(items) != 0 {
			t.Errorf("ReadItems(%q) = %q, %v; want no items and no error", in, texts(items), err)
		}
	}
}

func TestReadItemsErrors(t *testing.T) {
	for _, tc := range []struct {
		in, want string
	}{
		// JSON Lines: the line number counts blank lines, leading ones too.
		{"1\n2\n{bad\n", "items line 3: invalid JSON: invalid character 'b'"},
		{"\n\n1 2\n", "items line 3: invalid JSON: invalid character '2' after top-level value"},
		{"{\"a\":1}\n{\"a\":\n1}\n", "items line 2: invalid JSON: unexpected end of JSON input"},
		{"1\n\"\xff\"\n", "items line 2: invalid UTF-8"},
		{"\xff\n", "items line 1: invalid UTF-8"},
		{"1\r\n\f2\r\n", "items line 2: invalid JSON"}, // a form feed is not JSON space
		{"\"a\x01b\"\n", "items line 1: invalid JSON: invalid character '\\x01' in string literal"},
		// Arrays: the index and byte offset of the item.
		{"[1,2] x", "items array (byte 6): data after the closing ']'"},
		{"[1,2]\n[3]\n", "items array (byte 6): data after the closing ']'; input that starts with '[' is read as one JSON array"},
		{"[1,,2]", "items[1] (byte 3): expected an item, found ','"},
		{"[1,]", "items[1] (byte 3): expected an item, found ']'"},
		{"[1 2]", "items array (byte 3): expected ',' or ']' after items[0], found '2'"},
		{"[1,2", "items array (byte 4): the input ends before the closing ']'"},
		{"[", "items array (byte 1): the input ends before the closing ']'"},
		{"[1,{\"a\":", "items[1] (byte 3): the input ends inside the item"},
		{"[\"abc", "items[0] (byte 1): the input ends inside the item"},
		{"[1, tru]", "items[1] (byte 4): invalid JSON: "},
		{"[{\"a\":1]]", "items[0] (byte 1): invalid JSON"},
		{"[\"\xff\"]", "items[0] (byte 1): invalid UTF-8"},
		{"[1,\"\x01\"]", "items[1] (byte 3): invalid JSON"},
		{"[1}", "items array (byte 2): expected ',' or ']' after items[0], found '}'"},
	} {
		items, err := ReadItems(strings.NewReader(tc.in))
		if err == nil {
			t.Errorf("ReadItems(%q) = %q, want error %q", tc.in, texts(items), tc.want)
			continue
		}
		if !strings.Contains(err.Error(), tc.want) {
			t.Errorf("ReadItems(%q) error = %q, want it to contain %q", tc.in, err, tc.want)
		}
		if items != nil {
			t.Errorf("ReadItems(%q) returned items %q with its error", tc.in, texts(items))
		}
	}
}

// The syntax error stays reachable, for callers that want its offset.
func TestReadItemsSyntaxError(t *testing.T) {
	_, err := ReadItems(strings.NewReader("{\"a\" 1}\n"))
	var syntax *json.SyntaxError
	if !errors.As(err, &syntax) {
		t.Fatalf("error %v does not wrap a *json.SyntaxError", err)
	}
}

// A long line must not hit bufio.Scanner's 64 KiB limit, nor the 4 KiB of a
// default bufio.Reader.
func TestReadItemsLongLines(t *testing.T) {
	long := `"` + strings.Repeat("x", 1<<20) + `"`
	for _, in := range []string{
		"1\n" + long + "\n2\n",
		"[1," + long + ",2]",
		"[1,[" + long + "],2]",
	} {
		items, err := ReadItems(strings.NewReader(in))
		if err != nil {
			t.Fatal(err)
		}
		if len(items) != 3 || len(items[1]) < len(long) {
			t.Fatalf("got %d items, the second %d bytes", len(items), len(items[1]))
		}
	}
}

// An item may be exactly the limit; one byte more is an error that says the
// limit. The limit is lowered here to keep the test small.
func TestReadItemsLimit(t *testing.T) {
	const limit = 16
	exact := `"` + strings.Repeat("x", limit-2) + `"` // 16 bytes
	over := `"` + strings.Repeat("x", limit-1) + `"`  // 17 bytes
	num := strings.Repeat("1", limit)
	for _, in := range []string{
		exact + "\r\n" + exact + "\n",
		"[" + exact + "," + exact + "]",
		"[[" + strings.Repeat("1,", 6) + "1]]", // 15 bytes inside brackets
		"[" + num + "]",
		"1\n" + num,
	} {
		if _, err := readItems(strings.NewReader(in), limit); err != nil {
			t.Errorf("readItems(%q) at the limit: %v", in, err)
		}
	}
	for _, tc := range []struct{ in, want string }{
		{"1\n" + over + "\n", "items line 2: longer than the 16 bytes limit for one item"},
		{"1\n" + over, "items line 2: longer than the 16 bytes limit for one item"},
		{"1\n" + strings.Repeat(" ", 100) + "2", "items line 2: longer than"},
		{"[1," + over + "]", "items[1] (byte 3): longer than the 16 bytes limit for one item"},
		{"[1,[" + strings.Repeat("1,", 7) + "1]]", "items[1] (byte 3): longer than"},
		{"[1," + num + "1]", "items[1] (byte 3): longer than"},
	} {
		_, err := readItems(strings.NewReader(tc.in), limit)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("readItems(%q) error = %v, want %q", tc.in, err, tc.want)
		}
	}
}

// endless yields n bytes of 'x' without holding them.
type endless struct{ n int }

func (e *endless) Read(p []byte) (int, error) {
	if e.n == 0 {
		return 0, io.EOF
	}
	n := min(len(p), e.n, len(xs))
	copy(p, xs[:n])
	e.n -= n
	return n, nil
}

var xs = bytes.Repeat([]byte("x"), 64<<10)

// The real limit, without allocating the input: the reader must stop at
// 64 MiB instead of reading on.
func TestReadItemsMaxItemBytes(t *testing.T) {
	for _, prefix := range []string{`1` + "\n" + `"`, `[1,"`} {
		r := io.MultiReader(strings.NewReader(prefix), &endless{n: maxItemBytes + 10})
		_, err := ReadItems(r)
		if err == nil || !strings.Contains(err.Error(), "longer than the 64 MiB limit for one item") {
			t.Errorf("error = %v, want the 64 MiB limit", err)
		}
	}
}

func TestReadItemsReadError(t *testing.T) {
	boom := errors.New("boom")
	for _, in := range []string{"", "1\n2", "[1,2"} {
		r := io.MultiReader(strings.NewReader(in), iotest.ErrReader(boom))
		_, err := ReadItems(r)
		if !errors.Is(err, boom) {
			t.Errorf("ReadItems(%q then an error) = %v, want it to wrap the read error", in, err)
		}
	}
}

// Items are handed to callers who may append to them; they must not share
// memory with each other.
func TestReadItemsOwnMemory(t *testing.T) {
	for _, in := range []string{"1\n2\n3\n", "[1,2,3]"} {
		items, err := ReadItems(strings.NewReader(in))
		if err != nil {
			t.Fatal(err)
		}
		_ = append(items[0], '9', '9', '9')
		equalTexts(t, items, "1", "2", "3")
	}
}

// checkItems checks what ReadItems promises about the items it returns.
func checkItems(t *testing.T, items []Item) {
	t.Helper()
	for i, it := range items {
		if !json.Valid(it) || !utf8.Valid(it) {
			t.Fatalf("item %d %q is not valid JSON", i, it)
		}
		var b bytes.Buffer
		if err := json.Compact(&b, it); err != nil || !bytes.Equal(b.Bytes(), it) {
			t.Fatalf("item %d %q is not compact", i, it)
		}
	}
}

func FuzzReadItems(f *testing.F) {
	for _, s := range []string{
		"", "\n", "1\n2\n", "[1,2]", "[]", " [ [1], {\"a\":[]} ]\n",
		"{\"a\": \"b\\n]\"}\r\n\r\n[1]\n", "\"\\u2028\"\n", "[\"\\\"]\"]",
		"[1,", "[{]}]", "1 2", "\xff", "[\"\xff\"]", "nul\n", "[-0.0e+1, 1E9]",
		"[1] [2]", "[[[[[[[[[[]]]]]]]]]]", "\ufeff[1]", "\ufeff\ufeff1", "{\"a\":{\"b\":[1,2,{\"c\":null}]}}\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		items, err := ReadItems(bytes.NewReader(data))
		if err != nil {
			if items != nil {
				t.Fatalf("items %q returned with error %v", texts(items), err)
			}
			return
		}
		checkItems(t, items)

		// Written back as JSON Lines, the items read the same. JSON Lines
		// whose first item is an array read as one array, by design; those
		// only round-trip as an array, checked below.
		if len(items) > 0 && items[0][0] != '[' {
			var lines bytes.Buffer
			for _, it := range items {
				lines.Write(it)
				lines.WriteString("\n")
			}
			again, err := ReadItems(&lines)
			if err != nil {
				t.Fatalf("reading back %q: %v", lines.String(), err)
			}
			equalTexts(t, again, texts(items)...)
		}

		array := Batch{Items: items}.JSON()
		again, err := ReadItems(bytes.NewReader(array))
		if err != nil {
			t.Fatalf("reading back %q: %v", array, err)
		}
		equalTexts(t, again, texts(items)...)
	})
}
