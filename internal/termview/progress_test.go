package termview

import (
	"bytes"
	"testing"
	"time"
)

// TestReplayProgress: the line is drawn at most every progressEvery, cut
// to the width, erased before each write through Erasing, and gone for
// good once the last stored line is out.
func TestReplayProgress(t *testing.T) {
	now := t0
	var b bytes.Buffer
	p := NewReplayProgress(&b, Info{TTY: true, Width: 30}, 1, 4000, func() time.Time { return now })
	now = now.Add(100 * time.Millisecond)
	p.Printed(50)
	if b.Len() != 0 {
		t.Fatalf("drawn before %v: %q", progressEvery, b.String())
	}
	now = now.Add(time.Second)
	p.Printed(1100)
	if want := "spool: 1,100 of 4,000 lines …"; b.String() != want {
		t.Fatalf("drawn %q, want %q", b.String(), want)
	}
	w := p.Erasing(&b)
	w.Write([]byte("x\n"))
	w.Write([]byte("y\n"))
	p.Printed(4000)
	now = now.Add(time.Second)
	p.Printed(4100)
	if want := "spool: 1,100 of 4,000 lines …" + ClearLine + "x\ny\n"; b.String() != want {
		t.Fatalf("got %q, want %q", b.String(), want)
	}
}

func TestThousands(t *testing.T) {
	for n, want := range map[int64]string{0: "0", 999: "999", 1000: "1,000", 1234567: "1,234,567", 100000: "100,000"} {
		if got := Thousands(n); got != want {
			t.Errorf("Thousands(%d) = %q, want %q", n, got, want)
		}
	}
}

func TestBar(t *testing.T) {
	if got := (Info{TTY: true}).Bar(2, 5, true); got != "██░░░" {
		t.Errorf("without colours: %q", got)
	}
	if got := (Info{TTY: true, Color: true}).Bar(5, 5, true); got != Red+"█████"+Reset {
		t.Errorf("failing, in colour: %q", got)
	}
	if got := (Info{TTY: true, Color: true}).Bar(0, 3, false); got != "░░░" {
		t.Errorf("healthy, in colour: %q", got)
	}
}
