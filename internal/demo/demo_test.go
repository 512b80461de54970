package demo

import (
	"bytes"
	"context"
	"os"
	"strings"
	"testing"
	"time"
)

// TestDemo runs `spool demo` and checks its figures: what batching promises
// for a 10,000-line job (at least 40x fewer writes, a replay from line
// 9,000 that reads a few dozen items).
func TestDemo(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	var out bytes.Buffer
	f, err := Run(ctx, Options{Out: &out})
	t.Log("\n" + out.String())
	if err != nil {
		t.Fatal(err)
	}
	if f.Lines != 10000 || f.FollowedLive != 10000 {
		t.Fatalf("%d lines stored, %d followed live; want 10,000 each", f.Lines, f.FollowedLive)
	}
	if r := f.WriteReduction(); r < 40 {
		t.Fatalf("batching wrote %d items for %d: only %.1fx fewer, want at least 40x", f.StoredItems, f.Unbatched, r)
	}
	if f.ReplayFirst != "line 9000" || f.ReplayLast != "line 10000" || f.ReplayLines != 1001 {
		t.Fatalf("replay from 9,000: %d lines from %q to %q", f.ReplayLines, f.ReplayFirst, f.ReplayLast)
	}
	// 20 batches of 50 lines hold lines 9,000-10,000 (21 if 9,000 starts
	// mid-batch), plus PROCESS_END; a few flushes may be smaller than 50.
	if f.ReplayItemsRead < 21 || f.ReplayItemsRead > 30 {
		t.Fatalf("replay from 9,000 read %d stored items, want about 22", f.ReplayItemsRead)
	}
	if b := f.BytesPerOutputByte(); b >= 1 {
		t.Fatalf("stored %.2f bytes per byte of output; compression should keep it below 1", b)
	}
	for _, want := range []string{"fewer writes", "replaying from line 9000", "line 9000"} {
		if !strings.Contains(out.String(), want) {
			t.Fatalf("the report does not say %q", want)
		}
	}
}

// TestTryItNamesEveryStep: the closing tip lists every command it takes to
// do the demo by hand, a worker included (without one the job would wait
// forever).
func TestTryItNamesEveryStep(t *testing.T) {
	var out bytes.Buffer
	report(&out, Options{Lines: 500, ReplayFrom: 400}, Figures{StoredItems: 1, OutputBytes: 1})
	for _, want := range []string{"spool server\n", "spool worker\n", "spool submit --follow --shell 'seq 1 500'\n", "spool logs JOB --from 400\n"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("the tip does not say %q:\n%s", want, out.String())
		}
	}
}

// TestDemoSpeaksBeforeItStarts: the demo's first line is out before it
// makes anything (its temporary directory, so its server, its worker), so
// that whoever runs it sees at once that it runs.
func TestDemoSpeaksBeforeItStarts(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp) // where the demo makes its directory
	w := &firstWrite{dir: tmp}
	if _, err := Run(context.Background(), Options{Lines: 100, ReplayFrom: 50, Out: w}); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(w.first, "spool demo: starting") {
		t.Fatalf("the first line is %q; want it to say the demo is starting", w.first)
	}
	if len(w.made) > 0 {
		t.Fatalf("when the first line was written, the demo had made %v already", w.made)
	}
	if w.writes < 2 {
		t.Fatal("the demo wrote nothing after its first line")
	}
}

// firstWrite keeps the first write, and what dir held at that moment.
type firstWrite struct {
	dir    string
	first  string
	made   []string
	writes int
}

func (w *firstWrite) Write(p []byte) (int, error) {
	if w.writes == 0 {
		w.first = string(p)
		entries, _ := os.ReadDir(w.dir)
		for _, e := range entries {
			w.made = append(w.made, e.Name())
		}
	}
	w.writes++
	return len(p), nil
}
