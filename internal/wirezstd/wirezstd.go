// Package wirezstd registers zstd as a Connect compression, so batches of
// output travel compressed from worker to server (log output shrinks 3-10x)
// at a fraction of gzip's CPU cost. Servers accept it from any client;
// clients send it when asked to (client.WithCompressedRequests).
package wirezstd

import (
	"io"

	"connectrpc.com/connect"
	"github.com/klauspost/compress/zstd"
)

// Name is the compression's name on the wire (Connect-Content-Encoding).
const Name = "zstd"

// maxWindow bounds the decoder's memory per stream, so a hostile request
// cannot make the server allocate without limit; Connect's read limit
// bounds the decompressed message itself.
const maxWindow = 8 << 20

// Handler lets a handler accept and answer in zstd.
func Handler() connect.HandlerOption {
	return connect.WithCompression(Name, newDecompressor, newCompressor)
}

// Client lets a client accept zstd responses and send zstd requests (with
// connect.WithSendCompression(Name)).
func Client() connect.ClientOption {
	return connect.WithAcceptCompression(Name, newDecompressor, newCompressor)
}

type decompressor struct{ *zstd.Decoder }

// Close ends one message. Connect pools decompressors and Resets them for
// the next message, so the decoder itself must stay usable (with
// concurrency 1 it holds no goroutines, only buffers worth reusing).
func (d decompressor) Close() error { return nil }

func newDecompressor() connect.Decompressor {
	d, _ := zstd.NewReader(nil, zstd.WithDecoderConcurrency(1), zstd.WithDecoderMaxWindow(maxWindow), zstd.WithDecoderLowmem(true))
	return decompressor{d}
}

func newCompressor() connect.Compressor {
	e, _ := zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedFastest), zstd.WithEncoderConcurrency(1), zstd.WithWindowSize(1<<20))
	return e
}

var _ io.Reader = decompressor{}
