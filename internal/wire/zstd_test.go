package wire

import (
	"bytes"
	"io"
	"runtime"
	"strings"
	"testing"
)

// compress writes msg through a compressor as Connect does: Reset to the
// destination, write, Close, then Reset to io.Discard before pooling it.
func compress(t *testing.T, c interface {
	io.Writer
	Close() error
	Reset(io.Writer)
}, msg string) []byte {
	t.Helper()
	var dst bytes.Buffer
	c.Reset(&dst)
	if _, err := io.WriteString(c, msg); err != nil {
		t.Fatal(err)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	c.Reset(io.Discard)
	return dst.Bytes()
}

func TestZstdCompressorsShareEncodersAcrossCollections(t *testing.T) {
	for len(idleEncoders) > 0 {
		<-idleEncoders
	}
	msg := strings.Repeat("a line of a job's output\n", 4000)
	first := newZstdCompressor().(*zstdCompressor)
	out := compress(t, first, msg)
	d := newZstdDecompressor(maxWindow)
	if err := d.Reset(bytes.NewReader(out)); err != nil {
		t.Fatal(err)
	}
	back, err := io.ReadAll(d)
	if err != nil || string(back) != msg {
		t.Fatalf("round trip: %d bytes back (%v), want %d", len(back), err, len(msg))
	}
	if first.enc != nil || len(idleEncoders) != 1 {
		t.Fatalf("after its message the handle holds %v and %d encoders are idle; want none held, one idle", first.enc, len(idleEncoders))
	}
	enc := <-idleEncoders
	idleEncoders <- enc

	// A collection empties Connect's pool, not the idle encoders: a new
	// handle writes with the same encoder.
	runtime.GC()
	runtime.GC()
	second := newZstdCompressor().(*zstdCompressor)
	second.Reset(io.Discard)
	if second.enc != nil {
		t.Fatal("a handle reset to io.Discard took an encoder")
	}
	var dst bytes.Buffer
	second.Reset(&dst)
	if second.enc != enc {
		t.Fatal("a new handle made a new encoder while one was idle")
	}
	if err := second.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := second.Write([]byte("x")); err == nil {
		t.Fatal("a write after Close, before Reset, was taken")
	}
}
