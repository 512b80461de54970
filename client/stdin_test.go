package client_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/spool-run/spool"
	"github.com/spool-run/spool/client"
	"github.com/spool-run/spool/server"
	"github.com/spool-run/spool/spooltest"
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
