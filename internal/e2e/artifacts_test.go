package e2e

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/spool-run/spool"
	"github.com/spool-run/spool/client"
	"github.com/spool-run/spool/internal/mototest"
)

// TestBigArtifactRoundTrip: a job writes a 200 MB file, which --artifacts
// collects; it comes back byte for byte (the SHA-256 the job printed), and
// neither the worker nor the server grows by 64 MB doing it: the file is
// streamed from the job's directory to the blob store and back. On
// PostgreSQL the file goes to the database, in chunks.
func TestBigArtifactRoundTrip(t *testing.T) {
	t.Parallel()
	onEveryStore(t, testBigArtifactRoundTrip)
}

func testBigArtifactRoundTrip(t *testing.T, store []string) {
	addr := freePort(t)
	srv, c := startServer(t, addr, t.TempDir(), store...)
	w := startWorker(t, "worker", "http://"+addr, t.TempDir())
	w.waitSaid(t, "worker started") // measured from when it is up
	const size = 200 * mib
	srvPid, wPid := pidOf(srv), pidOf(w)
	srvBefore, _ := memory(t, srvPid)
	wBefore, _ := memory(t, wPid)
	resetPeak(t, srvPid)
	resetPeak(t, wPid)

	job, _, err := c.Submit(context.Background(), client.SubmitParams{
		Script:    "mkdir out && head -c 209715200 /dev/urandom > out/big.bin && sha256sum out/big.bin",
		Artifacts: []string{"out/**", "missing.txt"},
	})
	if err != nil {
		t.Fatal(err)
	}
	done := waitFinal(t, c, job.ID)
	if done.State != spool.Succeeded {
		t.Fatalf("the job ended %s: %+v", done.State, done.Result)
	}
	var want string
	var said []string
	for l, err := range c.Lines(context.Background(), job.ID, client.StreamOptions{}) {
		if err != nil {
			t.Fatal(err)
		}
		said = append(said, l.Text)
		if sum, name, ok := strings.Cut(l.Text, "  "); ok && name == "out/big.bin" {
			want = sum
		}
	}
	if want == "" || len(said) < 2 || said[len(said)-1] != "uploaded 1 artifact (209.7 MB)" || !strings.Contains(strings.Join(said, "\n"), "no file matches missing.txt") {
		t.Fatalf("the job's output:\n%s", strings.Join(said, "\n"))
	}

	list, err := c.ListArtifacts(context.Background(), job.ID)
	if err != nil || len(list) != 1 || list[0].Path != "out/big.bin" || list[0].Size != size || list[0].SHA256 != want {
		t.Fatalf("listed %+v, %v; want out/big.bin of %d bytes, sha256 %s", list, err, size, want)
	}
	rc, info, err := c.DownloadArtifact(context.Background(), job.ID, "out/big.bin", 0, -1)
	if err != nil {
		t.Fatal(err)
	}
	h := sha256.New()
	n, err := io.Copy(h, rc)
	rc.Close()
	if err != nil || n != size || info.Size != size || hex.EncodeToString(h.Sum(nil)) != want {
		t.Fatalf("downloaded %d bytes (%v) of sha256 %x; want %d of %s", n, err, h.Sum(nil), size, want)
	}

	_, srvPeak := memory(t, srvPid)
	_, wPeak := memory(t, wPid)
	t.Logf("200 MB up and down: server %d -> peak %d MiB, worker %d -> peak %d MiB", srvBefore/mib, srvPeak/mib, wBefore/mib, wPeak/mib)
	if srvPeak-srvBefore >= 64*mib || wPeak-wBefore >= 64*mib {
		t.Fatalf("memory grew by %d MiB (server) and %d MiB (worker); want under 64 MiB each", (srvPeak-srvBefore)/mib, (wPeak-wBefore)/mib)
	}
}

// TestWorkerKilledMidUpload: a job uploads from a pipe the test writes
// (spool artifact upload -), and its worker is killed (SIGKILL, which the
// kernel passes on to the job's process) while the upload runs: the
// server lists no artifact, not even a part of one.
func TestWorkerKilledMidUpload(t *testing.T) {
	t.Parallel()
	addr := freePort(t)
	_, c := startServer(t, addr, t.TempDir())
	w := startWorker(t, "worker", "http://"+addr, t.TempDir())
	fifo := filepath.Join(t.TempDir(), "feed")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	job, _, err := c.Submit(context.Background(), client.SubmitParams{
		// exec: the upload is the command itself, which the kernel kills
		// with its worker.
		Script: `exec "$SPOOL_BIN" artifact upload --as slow.bin - < "$FEED"`,
		Env:    map[string]string{"SPOOL_BIN": spoolBin, "FEED": fifo},
	})
	if err != nil {
		t.Fatal(err)
	}
	feed, err := os.OpenFile(fifo, os.O_WRONLY, 0) // opens once the job reads it
	if err != nil {
		t.Fatal(err)
	}
	defer feed.Close()
	// 32 MB through the pipe: past what the pipe and the sockets hold, so
	// most of it has reached the server when the write returns.
	chunk := make([]byte, mib)
	for range 32 {
		if _, err := feed.Write(chunk); err != nil {
			t.Fatalf("the job stopped reading: %v", err)
		}
	}
	w.kill9(t)
	// The upload's process is gone with its worker: the pipe has no
	// reader any more.
	for {
		if _, err := feed.Write(chunk); err != nil {
			break
		}
	}
	list, err := c.ListArtifacts(context.Background(), job.ID)
	if err != nil || len(list) != 0 {
		t.Fatalf("after the worker was killed mid-upload: %+v, %v; want nothing", list, err)
	}
}

// TestArtifactsOnS3: a server keeping blobs in an S3 bucket (moto_server)
// keeps a job's file of several upload parts and gives it back byte for
// byte.
func TestArtifactsOnS3(t *testing.T) {
	t.Parallel()
	moto := mototest.For(t)
	bucket := mototest.NewName("artifacts")
	s3c := s3.NewFromConfig(moto.AWSConfig(), func(o *s3.Options) { o.UsePathStyle = true })
	if _, err := s3c.CreateBucket(t.Context(), &s3.CreateBucketInput{Bucket: aws.String(bucket)}); err != nil {
		t.Fatal(err)
	}
	args := configArgs(t, map[string]any{"blobs": map[string]any{"type": "s3", "s3": map[string]any{
		"bucket": bucket, "endpoint": moto.URL, "path_style": true, "region": mototest.Region, "part_size_mb": 5}}})
	addr := freePort(t)
	_, c := startServerEnv(t, addr, t.TempDir(), []string{"AWS_ACCESS_KEY_ID=test", "AWS_SECRET_ACCESS_KEY=test", "AWS_EC2_METADATA_DISABLED=true"}, args...)
	startWorker(t, "worker", "http://"+addr, t.TempDir())
	job, _, err := c.Submit(context.Background(), client.SubmitParams{
		Script:    "head -c 12582912 /dev/urandom > parts.bin && sha256sum parts.bin",
		Artifacts: []string{"*.bin"},
	})
	if err != nil {
		t.Fatal(err)
	}
	if done := waitFinal(t, c, job.ID); done.State != spool.Succeeded {
		t.Fatalf("the job ended %s: %+v", done.State, done.Result)
	}
	list, err := c.ListArtifacts(context.Background(), job.ID)
	if err != nil || len(list) != 1 || list[0].Size != 12<<20 {
		t.Fatalf("listed %+v, %v", list, err)
	}
	rc, _, err := c.DownloadArtifact(context.Background(), job.ID, "parts.bin", 0, -1)
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	h := sha256.New()
	if _, err := io.Copy(h, rc); err != nil || hex.EncodeToString(h.Sum(nil)) != list[0].SHA256 {
		t.Fatalf("downloaded sha256 %x (%v); listed %s", h.Sum(nil), err, list[0].SHA256)
	}
	var printed string
	for l, err := range c.Lines(context.Background(), job.ID, client.StreamOptions{}) {
		if err != nil {
			t.Fatal(err)
		}
		if sum, name, ok := strings.Cut(l.Text, "  "); ok && name == "parts.bin" {
			printed = sum
		}
	}
	if printed != list[0].SHA256 {
		t.Fatalf("the job printed sha256 %s; the artifact has %s", printed, list[0].SHA256)
	}
}
