package client_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"hash"
	"io"
	"math/rand/v2"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/spool-run/spool"
	"github.com/spool-run/spool/client"
	"github.com/spool-run/spool/server"
	"github.com/spool-run/spool/spooltest"
	"github.com/spool-run/spool/worker"
)

// TestSubmitStdinPlacement: a stdin that fits in the job record with the
// command goes inline; a larger one, given as bytes or as a reader, is
// uploaded first and kept beside the job; the server's limit on uploads
// comes back as spool.ErrInvalidArgument naming it.
func TestSubmitStdinPlacement(t *testing.T) {
	t.Parallel()
	srv := spooltest.NewServer(t, spooltest.Config{Server: func(c *server.Config) { c.Jobs.MaxStdinBytes = 1 << 20 }})
	c := srv.Client()
	ctx := context.Background()
	submit := func(p client.SubmitParams) *spool.Job {
		t.Helper()
		p.Argv = []string{"wc", "-c"}
		job, _, err := c.Submit(ctx, p)
		if err != nil {
			t.Fatal(err)
		}
		return job
	}
	small := bytes.Repeat([]byte("x"), 100<<10)
	large := bytes.Repeat([]byte("y"), 300<<10)
	for name, tc := range map[string]struct {
		p              client.SubmitParams
		inline, beside int
	}{
		"small bytes":  {client.SubmitParams{Stdin: small}, len(small), 0},
		"small reader": {client.SubmitParams{StdinFrom: bytes.NewReader(small)}, len(small), 0},
		"large bytes":  {client.SubmitParams{Stdin: large}, 0, len(large)},
		"large reader": {client.SubmitParams{StdinFrom: io.MultiReader(bytes.NewReader(large))}, 0, len(large)},
	} {
		job := submit(tc.p)
		if len(job.Params.Stdin) != tc.inline || job.Params.StdinSize != int64(tc.beside) {
			t.Errorf("%s: %d bytes inline, %d beside the job; want %d and %d", name, len(job.Params.Stdin), job.Params.StdinSize, tc.inline, tc.beside)
		}
	}
	_, _, err := c.Submit(ctx, client.SubmitParams{Argv: []string{"wc"}, StdinFrom: io.LimitReader(zeroReader{}, 2<<20)})
	if !errors.Is(err, spool.ErrInvalidArgument) || !strings.Contains(err.Error(), "jobs.max_stdin_bytes") {
		t.Errorf("a stdin over the server's limit: %v", err)
	}
	_, _, err = c.Submit(ctx, client.SubmitParams{Argv: []string{"wc"}, Stdin: small, StdinFrom: bytes.NewReader(small)})
	if !errors.Is(err, spool.ErrInvalidArgument) {
		t.Errorf("both Stdin and StdinFrom: %v", err)
	}
}

type zeroReader struct{}

func (zeroReader) Read(p []byte) (int, error) {
	clear(p)
	return len(p), nil
}

// TestSubmitLargeStdinStreams: a 100 MB stdin goes from the client to
// the server's blob store, beside its job, and to the worker's command
// (all in this process) with the heap growing by far less than the
// stdin: nothing on the way holds it whole. The command sees every byte.
func TestSubmitLargeStdinStreams(t *testing.T) {
	const size, bound = 100 << 20, 48 << 20
	srv := spooltest.NewServer(t)
	spooltest.NewWorker(t, srv, worker.Config{})
	c := srv.Client()

	heap := newHeapWatch()
	stop := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		tick := time.NewTicker(5 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
				heap.sample()
			}
		}
	}()
	gen := &stdinGenerator{rng: rand.NewChaCha8([32]byte{7}), left: size, sum: sha256.New()}
	job, _, err := c.Submit(context.Background(), client.SubmitParams{Argv: []string{"sha256sum"}, StdinFrom: gen})
	if err != nil {
		t.Fatal(err)
	}
	done := srv.WaitJob(t, job.ID)
	close(stop)
	<-sampled
	if done.State != spool.Succeeded || job.Params.StdinSize != size {
		t.Fatalf("job %s: %s, stdin %d bytes beside it", job.ID, done.State, job.Params.StdinSize)
	}
	var out strings.Builder
	for line, err := range c.Lines(context.Background(), job.ID, client.StreamOptions{}) {
		if err != nil {
			t.Fatal(err)
		}
		out.WriteString(line.Text)
	}
	if want := hex.EncodeToString(gen.sum.Sum(nil)); !strings.HasPrefix(out.String(), want) {
		t.Fatalf("the command read stdin with SHA-256 %q; want %s", out.String(), want)
	}
	t.Logf("a %d MB stdin through client, server and worker: heap grew by %.1f MB (bound %d MB)", size>>20, float64(heap.growth())/(1<<20), bound>>20)
	if heap.growth() >= bound {
		t.Errorf("the heap grew by %d MB carrying a %d MB stdin; want under %d MB", heap.growth()>>20, size>>20, bound>>20)
	}
}

// stdinGenerator yields left bytes that do not compress, without holding
// them, and hashes what it yields.
type stdinGenerator struct {
	rng  *rand.ChaCha8
	left int64
	sum  hash.Hash
}

func (g *stdinGenerator) Read(p []byte) (int, error) {
	if g.left <= 0 {
		return 0, io.EOF
	}
	p = p[:min(int64(len(p)), g.left)]
	_, _ = g.rng.Read(p)
	g.sum.Write(p)
	g.left -= int64(len(p))
	return len(p), nil
}

// heapWatch keeps the largest heap seen above where it started.
type heapWatch struct {
	mu         sync.Mutex
	base, peak uint64
}

func newHeapWatch() *heapWatch {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return &heapWatch{base: m.HeapAlloc, peak: m.HeapAlloc}
}

func (h *heapWatch) sample() {
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	h.mu.Lock()
	h.peak = max(h.peak, m.HeapAlloc)
	h.mu.Unlock()
}

func (h *heapWatch) growth() uint64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.peak - h.base
}
