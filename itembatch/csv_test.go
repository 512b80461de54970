package itembatch

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"testing"
	"testing/iotest"
)

// Each row becomes an object of strings in the header's order: quoted
// fields with commas, quotes and line breaks, CRLF line ends, a byte order
// mark, blank lines, HTML characters kept as they are, and values that
// look like numbers staying strings.
func TestReadCSVItems(t *testing.T) {
	in := "\ufeffpath,width,note\r\n" +
		"a.jpg,800,\"big, \"\"wide\"\"\"\r\n" +
		"\r\n" +
		"b.jpg,01234,\"two\nlines\"\n" +
		"c.jpg,,<b>&</b>"
	items, err := ReadCSVItems(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	equalTexts(t, items,
		`{"path":"a.jpg","width":"800","note":"big, \"wide\""}`,
		`{"path":"b.jpg","width":"01234","note":"two\nlines"}`,
		`{"path":"c.jpg","width":"","note":"<b>&</b>"}`,
	)
	checkItems(t, items)
}

func TestReadCSVItemsEmpty(t *testing.T) {
	for _, in := range []string{"", "\ufeff", "a,b\n", "a,b\n\n\n"} {
		items, err := ReadCSVItems(strings.NewReader(in))
		if err != nil || items != nil {
			t.Errorf("ReadCSVItems(%q) = %q, %v; want no items and no error", in, texts(items), err)
		}
	}
}

// Bad input is refused with the line that is wrong and what to do.
func TestReadCSVItemsErrors(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"a,b\n1,2\n1,2,3\n", "items line 3: 3 fields, but the header on line 1 names 2"},
		{"a,b\n1,2\n\"x\ny\",2\n3\n", "items line 5: 1 fields, but the header on line 1 names 2"},
		{"a,b\n1,2\n3\n", "items line 3: 1 fields"},
		{"a,b\n1,x\"y\n", "items line 2, column 4: bare \" in non-quoted-field (quote a field"},
		{"a,b\n1,\"x\"y\n", "items line 2, column 5: extraneous or missing \" in quoted-field"},
		{"a,b\n1,\"never closed\n2,3\n", "items line 3, column 5 (in the row from line 2): extraneous or missing \""},
		{"a,,c\n", "items line 1 (the header): column 2 has no name"},
		{"a,b,a\n", `items line 1 (the header): columns 1 and 3 are both named "a"`},
		{"a,b\n1,\xff\n", "items line 2: column 2: invalid UTF-8"},
		{"\xff\n1\n", "items line 1 (the header): column 1: invalid UTF-8"},
	} {
		items, err := ReadCSVItems(strings.NewReader(tc.in))
		if err == nil || !strings.Contains(err.Error(), tc.want) || items != nil {
			t.Errorf("ReadCSVItems(%q) = %q, %v; want error %q", tc.in, texts(items), err, tc.want)
		}
	}
}

// A row longer than the limit stops the reading there, even a quoted field
// that never closes and would otherwise swallow the rest of the input.
func TestReadCSVItemsLimit(t *testing.T) {
	const limit = 1 << 10
	ok := "a,b\n1," + strings.Repeat("x", limit-10) + "\n2,3\n"
	if items, err := readCSVItems(strings.NewReader(ok), limit); err != nil || len(items) != 2 {
		t.Fatalf("a row within the limit: %d items, %v", len(items), err)
	}
	for _, head := range []string{"a,b\n1,2\n3,\"", "\"", "a,b\n1,2\n\n3,"} {
		r := io.MultiReader(strings.NewReader(head), &endless{n: 1 << 20})
		_, err := readCSVItems(r, limit)
		if err == nil || !strings.Contains(err.Error(), "a row longer than the 1 KiB limit for one item") {
			t.Errorf("%q then 1 MiB: %v; want the limit", head, err)
		}
	}
	r := io.MultiReader(strings.NewReader("a,b\n1,2\n3,\""), &endless{n: maxItemBytes + 64<<10})
	if _, err := ReadCSVItems(r); err == nil || !strings.Contains(err.Error(), "items from line 3 on: a row longer than the 64 MiB limit") {
		t.Errorf("a quoted field that never closes: %v; want the 64 MiB limit from line 3", err)
	}
}

func TestReadCSVItemsReadError(t *testing.T) {
	boom := errors.New("boom")
	for _, in := range []string{"", "a,b\n", "a,b\n1,2\n3,"} {
		r := io.MultiReader(strings.NewReader(in), iotest.ErrReader(boom))
		if _, err := ReadCSVItems(r); !errors.Is(err, boom) {
			t.Errorf("ReadCSVItems(%q then an error) = %v, want it to wrap the read error", in, err)
		}
	}
}

func FuzzReadCSVItems(f *testing.F) {
	for _, s := range []string{
		"", "a\n1\n", "a,b\r\n1,2\r\n", "a,b\n\"x,\"\"y\"\"\",\"z\nw\"\n", "a,b\n1\n", "a,a\n1,2\n",
		",\n", "a,b\n1,x\"y\n", "a\n\"open\n", "\ufeffa\n<&>\n", "a\n\xff\n", "\"a\nb\",c\n1,2\n",
		"a,b,c\n1,2,3\n\n\n4,5,6", "a\n\"\"\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		items, err := readCSVItems(bytes.NewReader(data), 1<<10)
		if err != nil {
			if items != nil {
				t.Fatalf("items %q returned with error %v", texts(items), err)
			}
			return
		}
		checkItems(t, items)
		if len(items) == 0 {
			return
		}
		// Every item is an object of strings, and written back as CSV
		// under the same header, the items read the same.
		header := csvHeader(t, data)
		var out bytes.Buffer
		// Every field quoted: csv.Writer writes a row of one empty field
		// as a blank line, which reads as no row.
		write := func(row []string) {
			for k, v := range row {
				if k > 0 {
					out.WriteByte(',')
				}
				out.WriteString(`"` + strings.ReplaceAll(v, `"`, `""`) + `"`)
			}
			out.WriteString("\n")
		}
		write(header)
		for i, it := range items {
			var obj map[string]string
			if err := json.Unmarshal(it, &obj); err != nil || len(obj) != len(header) {
				t.Fatalf("item %d %q is not an object of %d strings: %v", i, it, len(header), err)
			}
			row := make([]string, len(header))
			for k, name := range header {
				row[k] = obj[name]
			}
			write(row)
		}
		again, err := readCSVItems(&out, 1<<20)
		if err != nil {
			t.Fatalf("reading back %q: %v", out.String(), err)
		}
		equalTexts(t, again, texts(items)...)
	})
}

// csvHeader is the header of input ReadCSVItems read without error.
func csvHeader(t *testing.T, data []byte) []string {
	t.Helper()
	data = bytes.TrimPrefix(data, []byte(bom))
	h, err := csv.NewReader(bytes.NewReader(data)).Read()
	if err != nil {
		t.Fatalf("the header of %q: %v", data, err)
	}
	return h
}
