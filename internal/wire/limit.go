package wire

import (
	"compress/gzip"
	"errors"
	"fmt"
	"io"

	"connectrpc.com/connect"
	"github.com/klauspost/compress/zstd"
)

// HandlerCompression lets a handler accept requests compressed with gzip or
// zstd (and answer in them), and refuses a request whose message comes out
// of the decompressor larger than limit bytes.
//
// The refusal happens while decompressing. Connect checks its read limit
// only after the decompressor has produced one byte too many, and then
// reads the decompressor to its end to report the size: given the
// decompressors Connect registers by default, a few kilobytes of
// compressed zeros would be expanded in full, gigabytes of them. These
// decompressors fail as soon as more than limit bytes have come out, and
// keep failing, so Connect stops at once.
//
// A zstd frame may also ask for a window of up to 1 MiB, or up to limit
// when that is larger (at most maxWindow): the decoder allocates the
// window a frame asks for, and an encoder needs none larger than the
// message (ours asks for 1 MiB when it does not know the size ahead).
func HandlerCompression(limit int) connect.HandlerOption {
	window := min(maxWindow, max(1<<20, limit))
	return connect.WithHandlerOptions(
		// gzip first: handlers prefer the compression registered last.
		connect.WithCompression("gzip",
			func() connect.Decompressor { return newLimited(&gzip.Reader{}, limit, window) },
			func() connect.Compressor { return gzip.NewWriter(io.Discard) }),
		connect.WithCompression(Name,
			func() connect.Decompressor { return newLimited(newZstdDecompressor(window), limit, window) },
			newZstdCompressor),
	)
}

func newLimited(d connect.Decompressor, limit, window int) *limitedDecompressor {
	return &limitedDecompressor{Decompressor: d, limit: int64(limit), window: int64(window)}
}

// limitedDecompressor fails once more than limit bytes have come out of the
// message being decompressed.
type limitedDecompressor struct {
	connect.Decompressor
	limit  int64
	window int64 // the largest zstd window accepted, for the error
	out    int64 // bytes out of the current message
}

func (d *limitedDecompressor) Reset(r io.Reader) error {
	d.out = 0
	return d.Decompressor.Reset(r)
}

func (d *limitedDecompressor) Read(p []byte) (int, error) {
	if d.out > d.limit {
		return 0, d.tooLarge()
	}
	// Never decompress more than one byte past the limit, whatever the
	// caller's buffer.
	if room := d.limit + 1 - d.out; int64(len(p)) > room {
		p = p[:room]
	}
	n, err := d.Decompressor.Read(p)
	d.out += int64(n)
	switch {
	case d.out > d.limit:
		return n, d.tooLarge()
	case errors.Is(err, zstd.ErrWindowSizeExceeded):
		return n, connect.NewError(connect.CodeInvalidArgument,
			fmt.Errorf("the request is compressed with a zstd window larger than the %s this server decodes; compress it with a smaller window", BytesText(d.window)))
	}
	return n, err
}

func (d *limitedDecompressor) tooLarge() error {
	return connect.NewError(connect.CodeResourceExhausted,
		fmt.Errorf("the request decompresses to more than %s, the most this call accepts", BytesText(d.limit)))
}

// BytesText formats a byte count for people: "64 KiB", "16 MiB", "1000 bytes".
func BytesText(n int64) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", n>>20)
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%d KiB", n>>10)
	}
	return fmt.Sprintf("%d bytes", n)
}
