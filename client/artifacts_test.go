package client_test

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/spool-run/spool"
	"github.com/spool-run/spool/client"
	"github.com/spool-run/spool/spooltest"
)

// TestArtifactRanges: an upload from a file already partly read sends
// the rest, with its length; a download reads any range of it and says
// the whole file's size; a missing artifact is spool.ErrNotFound, and a
// job token of an ended attempt spool.ErrStaleLease.
func TestArtifactRanges(t *testing.T) {
	srv := spooltest.NewServer(t)
	c := srv.Client()
	ctx := context.Background()
	if _, _, err := c.Submit(ctx, client.SubmitParams{Argv: []string{"make"}}); err != nil {
		t.Fatal(err)
	}
	l := spooltest.LeaseJob(t, srv, "")
	job := srv.Client(client.Config{APIKey: l.JobToken()})

	path := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(path, []byte("header|0123456789"), 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.Seek(int64(len("header|")), io.SeekStart); err != nil {
		t.Fatal(err)
	}
	a, err := job.UploadArtifact(ctx, l.JobID(), "digits.txt", f)
	if err != nil || a.Size != 10 {
		t.Fatalf("upload: %+v, %v", a, err)
	}

	for _, r := range []struct {
		offset, length int64
		want           string
	}{{0, -1, "0123456789"}, {3, 4, "3456"}, {7, -1, "789"}, {8, 100, "89"}} {
		rc, info, err := c.DownloadArtifact(ctx, l.JobID(), "digits.txt", r.offset, r.length)
		if err != nil {
			t.Fatalf("%+v: %v", r, err)
		}
		b, err := io.ReadAll(rc)
		rc.Close()
		if err != nil || string(b) != r.want || info.Size != 10 || info.SHA256 != a.SHA256 {
			t.Fatalf("from %d, %d bytes: %q %+v %v; want %q", r.offset, r.length, b, info, err, r.want)
		}
	}
	if _, _, err := c.DownloadArtifact(ctx, l.JobID(), "nope", 0, -1); !errors.Is(err, spool.ErrNotFound) {
		t.Fatalf("a missing artifact: %v", err)
	}
	l.End(0)
	if _, err := job.UploadArtifact(ctx, l.JobID(), "late.txt", f); !errors.Is(err, spool.ErrStaleLease) {
		t.Fatalf("after the job ended: %v", err)
	}
}
