package connectapi_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"io"
	"math/rand/v2"
	"net/http"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"connectrpc.com/connect"
	"github.com/klauspost/compress/zstd"

	"github.com/spool-run/spool/client"
	spoolv1 "github.com/spool-run/spool/gen/spool/v1"
	"github.com/spool-run/spool/gen/spool/v1/spoolv1connect"
	"github.com/spool-run/spool/internal/events"
	"github.com/spool-run/spool/internal/service"
	"github.com/spool-run/spool/internal/wire"
	"github.com/spool-run/spool/spooltest"
)

// rpcError is a Connect unary error body.
type rpcError struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// post sends body to a procedure as a Connect unary request in the binary
// encoding, compressed as encoding says ("" for not at all).
func post(t *testing.T, ctx context.Context, srv *spooltest.Server, procedure, encoding string, body io.Reader) (int, rpcError) {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, srv.URL+procedure, body)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+srv.AdminKey)
	req.Header.Set("Content-Type", "application/proto")
	req.Header.Set("Connect-Protocol-Version", "1")
	if encoding != "" {
		req.Header.Set("Content-Encoding", encoding)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s: %v", procedure, err)
	}
	defer resp.Body.Close()
	var e rpcError
	if resp.StatusCode != http.StatusOK {
		if err := json.NewDecoder(resp.Body).Decode(&e); err != nil {
			t.Fatalf("%s: %s with an unreadable error: %v", procedure, resp.Status, err)
		}
	}
	return resp.StatusCode, e
}

// gzipBomb is mib MiB of zeros in gzip: one compressed MiB repeated as
// members of one stream, which decompress as their concatenation.
func gzipBomb(mib int) []byte {
	var one bytes.Buffer
	w, _ := gzip.NewWriterLevel(&one, gzip.BestCompression)
	_, _ = w.Write(make([]byte, 1<<20))
	_ = w.Close()
	return bytes.Repeat(one.Bytes(), mib)
}

// zstdBomb is mib MiB of zeros in zstd, as frames of a MiB each.
func zstdBomb(mib int) []byte {
	e, _ := zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedBestCompression))
	return bytes.Repeat(e.EncodeAll(make([]byte, 1<<20), nil), mib)
}

// memStats is the process's memory statistics after a full collection
// (twice: the second also empties what sync.Pools kept from the first).
func memStats() runtime.MemStats {
	var m runtime.MemStats
	runtime.GC()
	runtime.GC()
	runtime.ReadMemStats(&m)
	return m
}

// TestDecompressionBombsRefused: small compressed requests that expand to
// far more than their call accepts are refused with the limit named, the
// in-process server allocates in proportion to the call's limit, not to
// what the request would expand to, and it keeps nothing.
func TestDecompressionBombsRefused(t *testing.T) {
	srv := spooltest.NewServer(t)
	calls := []struct {
		procedure string
		limit     int
		// Connect refuses a compressed body over the limit before
		// decompressing it: the gzip bomb is as large as fits.
		gzipMiB int
	}{
		{spoolv1connect.JobServiceGetJobProcedure, service.MaxRequestBytes, 60},
		{spoolv1connect.JobServicePublishEventsProcedure, service.MaxPublishRequestBytes, 1024},
	}
	ctx := context.Background()
	base := memStats()
	for _, c := range calls {
		for _, b := range []struct {
			encoding string
			body     []byte
		}{
			{"gzip", gzipBomb(c.gzipMiB)},
			{"zstd", zstdBomb(1024)},
		} {
			if len(b.body) >= c.limit {
				t.Fatalf("the %s bomb is %d bytes compressed: too large to reach the decompressor", b.encoding, len(b.body))
			}
			before := memStats()
			status, e := post(t, ctx, srv, c.procedure, b.encoding, bytes.NewReader(b.body))
			allocated := memStats().TotalAlloc - before.TotalAlloc
			t.Logf("%s, %d KiB of %s: %d %s %q; %.1f MiB allocated", c.procedure, len(b.body)>>10, b.encoding, status, e.Code, e.Message, float64(allocated)/(1<<20))
			if e.Code != connect.CodeResourceExhausted.String() || !strings.Contains(e.Message, "decompresses to more than") {
				t.Errorf("%s with a %s bomb: %d %s %q; want resource_exhausted naming the limit", c.procedure, b.encoding, status, e.Code, e.Message)
			}
			// Connect's buffer grows by doubling as it reads up to the
			// limit, which allocates about four times the limit (twice
			// that as the race detector counts); the decoders' state
			// is a few MiB at most.
			if bound := uint64(10*c.limit + 8<<20); allocated > bound {
				t.Errorf("%s with a %s bomb: the process allocated %.1f MiB, more than %.1f MiB", c.procedure, b.encoding,
					float64(allocated)/(1<<20), float64(bound)/(1<<20))
			}
		}
	}
	if grown := int64(memStats().HeapAlloc) - int64(base.HeapAlloc); grown > 4<<20 {
		t.Errorf("the heap grew %.1f MiB over the bombs", float64(grown)/(1<<20))
	}
}

// endless is a request body that never ends, counting what was read of it.
type endless struct{ read atomic.Int64 }

func (e *endless) Read(p []byte) (int, error) {
	clear(p)
	e.read.Add(int64(len(p)))
	return len(p), nil
}

// TestEndlessBodyStopped: a request body that goes on past its call's
// limit is not read to its end (it has none); the call is refused.
func TestEndlessBodyStopped(t *testing.T) {
	srv := spooltest.NewServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	body := &endless{}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, srv.URL+spoolv1connect.JobServiceGetJobProcedure, body)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+srv.AdminKey)
	req.Header.Set("Content-Type", "application/proto")
	resp, err := http.DefaultClient.Do(req)
	if ctx.Err() != nil {
		t.Fatalf("the server was still reading an endless body after %d MiB", body.read.Load()>>20)
	}
	if err == nil {
		// The server may answer before the client notices it stopped
		// reading; then the answer says why.
		defer resp.Body.Close()
		var e rpcError
		_ = json.NewDecoder(resp.Body).Decode(&e)
		if e.Code != connect.CodeResourceExhausted.String() {
			t.Errorf("endless body: %s %q, want resource_exhausted", e.Code, e.Message)
		}
	}
	t.Logf("the client sent %d KiB before the server stopped reading (%v)", body.read.Load()>>10, err)
}

// TestCallLimits: each call accepts what it can need. An enqueue with the
// largest parameters the core takes and a publish of 10 MB of output
// (compressed with zstd, as workers send it) go through; an id larger than
// any call but those two accepts is refused by its size.
func TestCallLimits(t *testing.T) {
	srv := spooltest.NewServer(t)
	ctx := context.Background()
	c := srv.Client()
	script := strings.Repeat("echo spool\n", (256<<10)/len("echo spool\n"))
	if _, _, err := c.Submit(ctx, client.SubmitParams{Script: script}); err != nil {
		t.Fatalf("enqueue with %d bytes of script: %v", len(script), err)
	}

	l := spooltest.LeaseJob(t, srv, "")
	rpc, err := wire.Dial(srv.URL, wire.Options{Compress: true, APIKey: srv.AdminKey})
	if err != nil {
		t.Fatal(err)
	}
	// 100 batches of 50 lines of 2,000 bytes of text that compresses as
	// output does, a few times over.
	rnd := rand.New(rand.NewPCG(1, 2))
	words := strings.Fields("ok PASS FAIL github.com/spool-run/spool internal/store --- RUN (0.01s) error: warning: compiling linking " +
		"main.go:12:3 undefined: expected got want 0x1f3a 404 200 GET POST /api/v1/jobs retry in 250ms done")
	var evs []*spoolv1.JobEvent
	seq, size := l.NextSequence(), 0
	for range 100 {
		lines := make([]string, 50)
		for i := range lines {
			var b strings.Builder
			for b.Len() < 2000 {
				b.WriteString(words[rnd.IntN(len(words))])
				b.WriteString(strconv.Itoa(rnd.IntN(1000)))
				b.WriteByte(' ')
			}
			lines[i] = b.String()[:2000]
			size += len(lines[i])
		}
		evs = append(evs, events.Batch{Sequence: seq, Lines: events.TextLines(time.Now(), lines...)}.Event())
		seq += 50
	}
	resp, err := rpc.PublishEvents(ctx, connect.NewRequest(&spoolv1.PublishEventsRequest{TaskToken: l.TaskToken(), Events: evs}))
	if err != nil {
		t.Fatalf("publish of %d bytes of output: %v", size, err)
	}
	if resp.Msg.GetLineCount() != 5000 {
		t.Fatalf("after publishing 5000 lines the log has %d", resp.Msg.GetLineCount())
	}

	_, err = rpc.GetJob(ctx, connect.NewRequest(&spoolv1.GetJobRequest{JobId: strings.Repeat("x", service.MaxRequestBytes)}))
	if connect.CodeOf(err) != connect.CodeResourceExhausted {
		t.Fatalf("GetJob with a %d-byte id: %v, want resource_exhausted", service.MaxRequestBytes, err)
	}
}
