package capture_test

import (
	"testing"
	"time"

	"github.com/spool-run/spool/internal/batcher/batchertest"
	"github.com/spool-run/spool/internal/capture"
)

// FuzzLines: whatever the bytes, however they are cut into reads and
// wherever idle flushes fall, the Lines give back the stream byte for
// byte; with no idle flush they are exactly the reference split.
//
// idle is a bit mask over reads: bit i%16 set means IdleFlush passes
// before read i.
func FuzzLines(f *testing.F) {
	f.Add([]byte("hello\nworld\n"), uint8(0), uint8(255), uint16(0))
	f.Add([]byte("a\r\nb\r\n\xff\xfe\x00\n"), uint8(3), uint8(2), uint16(0))
	f.Add([]byte("Password: secret\nprogress 10%\rprogress 20%\r"), uint8(8), uint8(5), uint16(0b1010))
	f.Add([]byte("abcd\nabcdefgh\nabcdefghi"), uint8(3), uint8(1), uint16(0xffff))
	f.Fuzz(func(t *testing.T, in []byte, maxLine, chunk uint8, idle uint16) {
		max := 1 + int(maxLine%64)
		clock := batchertest.NewClock(time.Time{})
		r := &chunkReader{data: in, sizes: []int{1 + int(chunk)}, before: func(read int) {
			if idle&(1<<(read%16)) != 0 {
				clock.Advance(capture.DefaultIdleFlush)
			}
		}}
		got := captureAll(t, r, capture.Options{Stream: stderr, MaxLine: max, Clock: clock})
		checkLines(t, in, got, max, stderr)
		if idle == 0 {
			if want := reference(in, max); !sameLines(got, want) {
				t.Fatalf("got %s, want %s", show(got), show(want))
			}
		}
		if clock.Pending() != 0 {
			t.Fatal("an idle timer outlived Lines")
		}
	})
}
