package worker_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spool-run/spool"
	"github.com/spool-run/spool/client"
	"github.com/spool-run/spool/spooltest"
	"github.com/spool-run/spool/worker"
)

// A stdin kept beside its job reaches the command whole; one whose bytes
// changed in the blob store fails its job, naming the checksum, instead of
// running the command on other input.
func TestStdinBesideTheJob(t *testing.T) {
	t.Parallel()
	srv := spooltest.NewServer(t)
	c := srv.Client()
	ctx := context.Background()
	stdin := bytes.Repeat([]byte("0123456789\n"), 30_000) // 330 KB: more than a job record holds
	good, _, err := c.Submit(ctx, client.SubmitParams{Argv: []string{"wc", "-c"}, Stdin: stdin})
	if err != nil {
		t.Fatal(err)
	}
	bad, _, err := c.Submit(ctx, client.SubmitParams{Argv: []string{"wc", "-c"}, Stdin: stdin})
	if err != nil {
		t.Fatal(err)
	}
	if good.Params.StdinSize != int64(len(stdin)) || bad.Params.StdinSize != int64(len(stdin)) {
		t.Fatalf("stdins beside the jobs: %d and %d bytes; want %d", good.Params.StdinSize, bad.Params.StdinSize, len(stdin))
	}
	// Change a byte of the second job's stdin where the server keeps it.
	var path string
	_ = filepath.WalkDir(filepath.Join(srv.Config().Server.DataDir, "blobs"), func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.Contains(p, bad.ID) {
			path = p
		}
		return nil
	})
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("the stdin of job %s in the blob directory: %v", bad.ID, err)
	}
	b[len(b)-1] ^= 1
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}

	spooltest.NewWorker(t, srv, worker.Config{})
	if j := srv.WaitJob(t, good.ID); j.State != spool.Succeeded {
		t.Fatalf("the job with its stdin whole: %s %+v", j.State, j.Result)
	}
	var out strings.Builder
	for line, err := range c.Lines(ctx, good.ID, client.StreamOptions{}) {
		if err != nil {
			t.Fatal(err)
		}
		out.WriteString(line.Text)
	}
	if strings.TrimSpace(out.String()) != "330000" {
		t.Errorf("the command counted %q bytes on stdin; want 330000", out.String())
	}
	j := srv.WaitJob(t, bad.ID)
	if j.State != spool.Failed || !strings.Contains(j.Result.Error, "SHA-256") {
		t.Errorf("the job whose stdin changed: %s, %+v; want failed, naming the checksum", j.State, j.Result)
	}
}
