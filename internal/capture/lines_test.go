package capture_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"testing/iotest"
	"time"

	"github.com/spool-run/spool/internal/batcher/batchertest"
	"github.com/spool-run/spool/internal/capture"
	"github.com/spool-run/spool/internal/events"
)

func TestLines(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		maxLine  int
		want     []events.Line
	}{
		{"lines", "a\nbb\n\nccc\n", 0, []events.Line{{Data: []byte("a")}, {Data: []byte("bb")}, {Data: []byte{}}, {Data: []byte("ccc")}}},
		{"partial last line", "a\nno newline", 0, []events.Line{{Data: []byte("a")}, {Data: []byte("no newline"), Partial: true}}},
		{"empty input", "", 0, nil},
		{"CRLF keeps its CR", "one\r\ntwo\r\n\r", 0, []events.Line{{Data: []byte("one\r")}, {Data: []byte("two\r")}, {Data: []byte("\r"), Partial: true}}},
		{"invalid UTF-8 and NUL pass through", "\xff\xfe\x00ok\xc3\n\x00", 0, []events.Line{{Data: []byte("\xff\xfe\x00ok\xc3")}, {Data: []byte{0}, Partial: true}}},
		{"long line split", "abcdefghij\n", 4, []events.Line{{Data: []byte("abcd"), Partial: true}, {Data: []byte("efgh"), Partial: true}, {Data: []byte("ij")}}},
		{"exactly MaxLine is one line", "abcd\nefgh", 4, []events.Line{{Data: []byte("abcd")}, {Data: []byte("efgh"), Partial: true}}},
		{"a multiple of MaxLine ends whole", "abcdefgh\n", 4, []events.Line{{Data: []byte("abcd"), Partial: true}, {Data: []byte("efgh")}}},
		{"MaxLine 1", "ab\n\nc", 1, []events.Line{{Data: []byte("a"), Partial: true}, {Data: []byte("b")}, {Data: []byte{}}, {Data: []byte("c"), Partial: true}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			maxLine := cmpOr(tc.maxLine, capture.DefaultMaxLine)
			// However the stream is cut into reads, the lines are the same.
			for _, r := range []io.Reader{
				strings.NewReader(tc.in),
				iotest.OneByteReader(strings.NewReader(tc.in)),
				iotest.HalfReader(strings.NewReader(tc.in)),
				iotest.DataErrReader(strings.NewReader(tc.in)),
			} {
				got := captureAll(t, r, capture.Options{Stream: stderr, MaxLine: tc.maxLine, IdleFlush: -1})
				if !sameLines(got, tc.want) {
					t.Fatalf("%T: got %s, want %s", r, show(got), show(tc.want))
				}
				checkLines(t, []byte(tc.in), got, maxLine, stderr)
			}
		})
	}
}

func cmpOr(v, def int) int {
	if v == 0 {
		return def
	}
	return v
}

// TestIdleFlushShowsPrompt: a prompt without a newline is shown after
// IdleFlush, and the answer continues the line.
func TestIdleFlushShowsPrompt(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	clock := batchertest.NewClock(time.Time{})
	pr, pw := io.Pipe()
	lines := make(chan events.Line, 10)
	done := make(chan error, 1)
	go func() {
		done <- capture.Lines(pr, capture.Options{Stream: stderr, Clock: clock}, func(l events.Line) { lines <- l })
	}()
	next := func() events.Line {
		t.Helper()
		select {
		case l := <-lines:
			return l
		case <-ctx.Done():
			t.Fatal("no line emitted")
			return events.Line{}
		}
	}
	noLine := func() {
		t.Helper()
		select {
		case l := <-lines:
			t.Fatalf("unexpected line %s", show([]events.Line{l}))
		default:
		}
	}

	start := clock.Now()
	if _, err := pw.Write([]byte("Continue? [y/N] ")); err != nil {
		t.Fatal(err)
	}
	// Once the idle timer is armed, the chunk has been split.
	if err := clock.WaitTimers(ctx, 1); err != nil {
		t.Fatal(err)
	}
	clock.Advance(capture.DefaultIdleFlush - time.Nanosecond)
	noLine()
	clock.Advance(time.Nanosecond)
	if l := next(); string(l.Data) != "Continue? [y/N] " || !l.Partial || !l.Time.Equal(start) {
		t.Fatalf("got %s at %v, want the prompt, partial, read at %v", show([]events.Line{l}), l.Time, start)
	}

	// A line that completes before IdleFlush is emitted whole, and its
	// timer is stopped.
	if _, err := pw.Write([]byte("y")); err != nil {
		t.Fatal(err)
	}
	if err := clock.WaitTimers(ctx, 1); err != nil {
		t.Fatal(err)
	}
	clock.Advance(capture.DefaultIdleFlush / 2)
	if _, err := pw.Write([]byte("es\nok\n")); err != nil {
		t.Fatal(err)
	}
	if l := next(); string(l.Data) != "yes" || l.Partial {
		t.Fatalf("got %s, want the answer whole", show([]events.Line{l}))
	}
	if l := next(); string(l.Data) != "ok" {
		t.Fatalf("got %s", show([]events.Line{l}))
	}
	if n := clock.Pending(); n != 0 {
		t.Fatalf("%d idle timers pending after the line completed", n)
	}
	clock.Advance(time.Hour)
	noLine()
	pw.Close()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	noLine()
}

// TestIdleFlushProgress: text that never ends its line (a progress
// display) is shown once per IdleFlush, and nothing is lost.
func TestIdleFlushProgress(t *testing.T) {
	clock := batchertest.NewClock(time.Time{})
	in := []byte("10%\r20%\r30%\r40%\rdone\n")
	r := &chunkReader{data: in, sizes: []int{4, 4, 4, 4, 5}, before: func(int) { clock.Advance(time.Second) }}
	got := captureAll(t, r, capture.Options{Stream: stderr, Clock: clock})
	want := []events.Line{
		{Data: []byte("10%\r"), Partial: true}, {Data: []byte("20%\r"), Partial: true}, {Data: []byte("30%\r"), Partial: true},
		{Data: []byte("40%\r"), Partial: true}, {Data: []byte("done")},
	}
	if !sameLines(got, want) {
		t.Fatalf("got %s, want %s", show(got), show(want))
	}
	checkLines(t, in, got, capture.DefaultMaxLine, stderr)
	if clock.Pending() != 0 {
		t.Fatal("an idle timer outlived Lines")
	}
}

// TestLineTimes: a Line is stamped with the time its last byte was read.
func TestLineTimes(t *testing.T) {
	clock := batchertest.NewClock(time.Time{})
	start := clock.Now()
	r := &chunkReader{data: []byte("ab\ncd\nef"), sizes: []int{4}, before: func(int) { clock.Advance(time.Millisecond) }}
	got := captureAll(t, r, capture.Options{Stream: stderr, Clock: clock, IdleFlush: -1})
	wantMs := []int{1, 2, 2} // "ab\nc" | "d\nef": cd ends in read 2, ef's last byte too
	for i, l := range got {
		if d := l.Time.Sub(start); d != time.Duration(wantMs[i])*time.Millisecond {
			t.Errorf("line %d %q: read at +%v, want +%dms", i, l.Data, d, wantMs[i])
		}
	}
}

// TestHugeLine: a 10 MiB line with MaxLine 256 KiB comes out in 40 pieces.
func TestHugeLine(t *testing.T) {
	const maxLine = 256 << 10
	in := bytes.Repeat([]byte("0123456789abcdef"), 10<<20/16)
	in = append(in, '\n')
	got := captureAll(t, bytes.NewReader(in), capture.Options{Stream: stderr, MaxLine: maxLine})
	if len(got) != 40 {
		t.Fatalf("%d pieces, want 40", len(got))
	}
	for i, l := range got {
		if len(l.Data) != maxLine || l.Partial != (i < 39) {
			t.Fatalf("piece %d: %d bytes, partial %v", i, len(l.Data), l.Partial)
		}
	}
	checkLines(t, in, got, maxLine, stderr)
}

// TestLargeInput: megabytes of random lines (binary, CRLF, long ones),
// read in odd-sized chunks, match the byte-by-byte reference exactly.
func TestLargeInput(t *testing.T) {
	src := rand.NewChaCha8([32]byte{1})
	rng := rand.New(src)
	var in []byte
	for len(in) < 8<<20 {
		n := rng.IntN(200)
		if rng.IntN(50) == 0 {
			n = rng.IntN(100_000)
		}
		line := make([]byte, n) // random bytes: mostly invalid UTF-8, some newlines of their own
		_, _ = src.Read(line)
		in = append(in, line...)
		if rng.IntN(4) == 0 {
			in = append(in, '\r')
		}
		in = append(in, '\n')
	}
	const maxLine = 4096
	r := &chunkReader{data: in, sizes: []int{32 << 10, 1, 4095, 4097, 12345, 7}}
	got := captureAll(t, r, capture.Options{Stream: stderr, MaxLine: maxLine, IdleFlush: -1})
	checkLines(t, in, got, maxLine, stderr)
	if want := reference(in, maxLine); !sameLines(got, want) {
		t.Fatalf("%d lines differ from the reference's %d", len(got), len(want))
	}
}

// errAfter returns its data, then err.
type errAfter struct {
	data []byte
	err  error
}

func (r *errAfter) Read(p []byte) (int, error) {
	if len(r.data) == 0 {
		return 0, r.err
	}
	n := copy(p, r.data)
	r.data = r.data[n:]
	return n, nil
}

// TestReadErrorKeepsOutput: a read error still emits the unfinished line.
func TestReadErrorKeepsOutput(t *testing.T) {
	boom := errors.New("boom")
	var got []events.Line
	err := capture.Lines(&errAfter{data: []byte("a\nhalf"), err: boom}, capture.Options{Clock: batchertest.NewClock(time.Time{})},
		func(l events.Line) { got = append(got, l) })
	if !errors.Is(err, boom) {
		t.Fatalf("err = %v, want boom", err)
	}
	if want := []events.Line{{Data: []byte("a")}, {Data: []byte("half"), Partial: true}}; !sameLines(got, want) {
		t.Fatalf("got %s, want %s", show(got), show(want))
	}
}

type emptyReader struct{}

func (emptyReader) Read([]byte) (int, error) { return 0, nil }

func TestBrokenReaderStops(t *testing.T) {
	err := capture.Lines(emptyReader{}, capture.Options{Clock: batchertest.NewClock(time.Time{})}, func(events.Line) {})
	if !errors.Is(err, io.ErrNoProgress) {
		t.Fatalf("err = %v, want io.ErrNoProgress", err)
	}
}

// TestIdleFlushOnRealClock: with the system clock the timer fires on its
// own goroutine; emits must still be serialized and in order (-race).
func TestIdleFlushOnRealClock(t *testing.T) {
	var in []byte
	for i := range 2000 {
		in = append(in, strings.Repeat("x", i%37)...)
		if i%3 == 0 {
			in = append(in, '\n')
		}
	}
	r := &chunkReader{data: in, sizes: []int{5, 11, 3}}
	var got []events.Line
	err := capture.Lines(r, capture.Options{Stream: stderr, MaxLine: 50, IdleFlush: time.Nanosecond}, func(l events.Line) {
		got = append(got, l) // unsynchronized on purpose: the race detector checks Lines serializes emit
	})
	if err != nil {
		t.Fatal(err)
	}
	checkLines(t, in, got, 50, stderr)
}

// TestStaleIdleTimerDoesNothing: an idle timer whose line was completed
// (but whose Stop came too late) must not cut the next unfinished line
// early.
func TestStaleIdleTimerDoesNothing(t *testing.T) {
	fake := batchertest.NewClock(time.Time{})
	start := fake.Now()
	advance := []time.Duration{0, 500 * time.Millisecond, 0, 600 * time.Millisecond}
	r := &chunkReader{data: []byte("abcdef\ngh"), sizes: []int{3, 4, 2}, before: func(read int) { fake.Advance(advance[read]) }}
	var got []string
	err := capture.Lines(r, capture.Options{Stream: stderr, Clock: batchertest.LateStops(fake)}, func(l events.Line) {
		got = append(got, fmt.Sprintf("%q@%v", l.Data, fake.Now().Sub(start)))
	})
	if err != nil {
		t.Fatal(err)
	}
	// "abc"'s timer is due at 1s, while "gh" waits: it must not flush "gh",
	// which is only emitted at EOF (1.1s), before its own timer (1.5s).
	if want := []string{`"abcdef"@500ms`, `"gh"@1.1s`}; !slices.Equal(got, want) {
		t.Fatalf("emitted %q, want %q", got, want)
	}
}
