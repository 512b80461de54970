package wire

import (
	"errors"
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

// Connect keeps the compressors it made in a sync.Pool, which lets go of
// them at every garbage collection; a zstd encoder allocates its history
// (2 MB with a 1 MiB window) on first use, so under load nearly every
// large message made and dropped an encoder's 2 MB, which brought the next
// collection sooner still: a fifth of what a server allocated answering
// batch enqueues. So Connect's compressors are light handles that take an
// encoder for a message and give it back when the message ends, and up to
// keptEncoders idle encoders are kept here, where collections leave them.
const keptEncoders = 4

var idleEncoders = make(chan *zstd.Encoder, keptEncoders)

// zstdCompressor is Connect's handle on an encoder, held from Reset to
// Close: one message.
type zstdCompressor struct{ enc *zstd.Encoder }

func newZstdCompressor() connect.Compressor { return &zstdCompressor{} }

// Reset starts a message written to w. Connect also resets a compressor
// to io.Discard as it puts it back in its pool: it has no encoder then.
func (c *zstdCompressor) Reset(w io.Writer) {
	if c.enc == nil {
		if w == io.Discard {
			return
		}
		select {
		case c.enc = <-idleEncoders:
		default:
			c.enc, _ = zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedFastest), zstd.WithEncoderConcurrency(1), zstd.WithWindowSize(1<<20))
		}
	}
	c.enc.Reset(w)
}

func (c *zstdCompressor) Write(p []byte) (int, error) {
	if c.enc == nil {
		return 0, errNoMessage
	}
	return c.enc.Write(p)
}

// Close ends the message and gives the encoder back.
func (c *zstdCompressor) Close() error {
	if c.enc == nil {
		return nil
	}
	err := c.enc.Close()
	c.enc.Reset(io.Discard) // keep no reference to the message's writer
	select {
	case idleEncoders <- c.enc:
	default:
	}
	c.enc = nil
	return err
}

var errNoMessage = errors.New("zstd: write before Reset")

var _ io.Reader = zstdDecompressor{}
