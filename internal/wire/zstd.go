package wire

import (
	"io"

	"connectrpc.com/connect"
	"github.com/klauspost/compress/zstd"
)

// zstd is registered as a Connect compression, so batches of output travel
// compressed from worker to server (log output shrinks 3-10x) at a fraction
// of gzip's CPU cost. Servers accept it from any client (HandlerCompression);
// clients send it when asked to (Options.Compress).

// Name is the compression's name on the wire (Connect-Content-Encoding).
const Name = "zstd"

// maxWindow bounds the decoder's history, which it allocates as large as a
// frame asks, so a frame cannot make the decoder hold more than that; what
// may come out of it is bounded by HandlerCompression's limit.
const maxWindow = 8 << 20

// ZstdClient lets a client accept zstd responses and send zstd requests (with
// connect.WithSendCompression(Name)).
func ZstdClient() connect.ClientOption {
	return connect.WithAcceptCompression(Name, func() connect.Decompressor { return newZstdDecompressor(maxWindow) }, newZstdCompressor)
}

type zstdDecompressor struct{ *zstd.Decoder }

// Close ends one message. Connect pools decompressors and Resets them for
// the next message, so the decoder itself must stay usable (with
// concurrency 1 it holds no goroutines, only buffers worth reusing).
func (d zstdDecompressor) Close() error { return nil }

// newZstdDecompressor returns a decoder of frames whose window is at most
// window bytes.
func newZstdDecompressor(window int) connect.Decompressor {
	d, _ := zstd.NewReader(nil,
		zstd.WithDecoderConcurrency(1),
		zstd.WithDecoderMaxWindow(uint64(window)),
		zstd.WithDecoderLowmem(true),
		// Connect hands the decoder the whole compressed message in a
		// bytes.Buffer, which the decoder would otherwise decode in one
		// go, however large the result. Streaming instead lets the reader
		// stop after the first bytes too many.
		zstd.WithDecodeBuffersBelow(0))
	return zstdDecompressor{d}
}

func newZstdCompressor() connect.Compressor {
	e, _ := zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedFastest), zstd.WithEncoderConcurrency(1), zstd.WithWindowSize(1<<20))
	return e
}

var _ io.Reader = zstdDecompressor{}
