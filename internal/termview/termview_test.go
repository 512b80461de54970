package termview

import (
	"bytes"
	"slices"
	"strings"
	"testing"

	"github.com/spool-run/spool"
)

func TestWrap(t *testing.T) {
	red := "\x1b[31m"
	cases := []struct {
		in   string
		want []string
	}{
		{"", []string{""}},
		{"short", []string{"short"}},
		{"exactly10!", []string{"exactly10!"}},
		{"abcdefghijklmnopqrstuvwxyz", []string{"abcdefghij", "klmnopqrst", "uvwxyz"}},
		{"héllo wörld, ça va", []string{"héllo wörl", "d, ça va"}},
		{red + "0123456789" + Reset + "ab", []string{red + "0123456789" + Reset, "ab"}},
		{"ab\tcd\tef", []string{"ab\tcd", "\tef"}},
		{"\xff\xfe0123456789", []string{"\xff\xfe01234567", "89"}},
	}
	for _, tc := range cases {
		var got []string
		for _, row := range Wrap([]byte(tc.in), 10) {
			got = append(got, string(row))
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("Wrap(%q, 10) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestColorWanted(t *testing.T) {
	env := func(kv map[string]string) func(string) string { return func(k string) string { return kv[k] } }
	if !ColorWanted(env(map[string]string{"TERM": "xterm-256color"})) {
		t.Error("no colours on a colour terminal")
	}
	if ColorWanted(env(map[string]string{"TERM": "xterm", "NO_COLOR": "1"})) {
		t.Error("NO_COLOR ignored")
	}
	if ColorWanted(env(map[string]string{"TERM": "dumb"})) {
		t.Error("colours on a dumb terminal")
	}
}

func out(text string, stderr bool) spool.Line {
	l := spool.Line{Text: text, Stream: spool.Stdout}
	if stderr {
		l.Stream = spool.Stderr
	}
	return l
}

// TestScreenOnTerminal: stderr in red, rows wrapped, notes dimmed, and the
// status line erased before each row and drawn again under it.
func TestScreenOnTerminal(t *testing.T) {
	for _, color := range []bool{true, false} {
		var b bytes.Buffer
		s := NewScreen(&b, &b, Info{TTY: true, Width: 12, Color: color})
		steps := []error{
			s.SetStatus("line 0 of 3"),
			s.Line(out("hello", false)),
			s.Note("… paused 5m0s"),
			s.Line(out("an error that wraps", true)),
			s.SetStatus("a status line too long to fit"),
			s.Finish("3 lines · succeeded"),
		}
		for i, err := range steps {
			if err != nil {
				t.Fatalf("step %d: %v", i, err)
			}
		}
		dim, red, reset, clear := Dim, Red, Reset, ClearLine
		status := func(s string) string { return dim + s + reset }
		if !color {
			dim, red, reset = "", "", ""
			status = func(s string) string { return s }
		}
		want := status("line 0 of 3") + clear +
			"hello\n" + status("line 0 of 3") + clear +
			dim + "… paused 5m0s" + reset + "\n" + status("line 0 of 3") + clear +
			red + "an error tha" + reset + "\n" + red + "t wraps" + reset + "\n" + status("line 0 of 3") + clear +
			status("a status l…") + clear +
			"3 lines · succeeded\n"
		if got := b.String(); got != want {
			t.Fatalf("color %v:\n got %q\nwant %q", color, got, want)
		}
	}
}

// TestScreenPlain: piped, the screen prints the lines alone on their own
// streams, partial lines without a newline, and none of its own remarks.
func TestScreenPlain(t *testing.T) {
	var o, e bytes.Buffer
	s := NewScreen(&o, &e, Info{})
	d := out("no newline", false)
	d.Partial = true
	for i, err := range []error{s.SetStatus("line 1 of 2"), s.Line(out("one", false)), s.Note("… paused 3s"), s.Line(out("two", true)), s.Line(d), s.Finish("2 lines · succeeded")} {
		if err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
	}
	if o.String() != "one\nno newline" || e.String() != "two\n" {
		t.Fatalf("stdout %q stderr %q", o.String(), e.String())
	}
	if strings.Contains(o.String()+e.String(), "\x1b") {
		t.Fatal("escape sequences in piped output")
	}
}
