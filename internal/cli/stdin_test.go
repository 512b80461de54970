package cli

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/spool-run/spool/client"
	"github.com/spool-run/spool/internal/mototest"
	"github.com/spool-run/spool/internal/store/backends/awsstore/awstest"
	"github.com/spool-run/spool/internal/store/backends/pgstore/pgtest"
	"github.com/spool-run/spool/server"
	"github.com/spool-run/spool/spooltest"
	"github.com/spool-run/spool/worker"
)

// stdinTokenKey signs the task tokens of servers on shared stores.
const stdinTokenKey = "MDEyMzQ1Njc4OTAxMjM0NTY3ODkwMTIzNDU2Nzg5MDE="

// TestSubmitLargeStdin: `spool submit --stdin` of a 50 MB file reaches the
// command byte for byte on every store (each with its blob store: a
// directory for memory and SQLite, the database for PostgreSQL, an S3
// bucket on moto for AWS); a rerun reads the same stdin; `spool jobs
// delete` takes the job's blobs with it.
func TestSubmitLargeStdin(t *testing.T) {
	// The AWS SDK of the server finds moto's test credentials in the
	// environment: the test runs alone, its stores side by side.
	mototest.SetEnv(t)
	in := filepath.Join(t.TempDir(), "in.bin")
	want := writeRandom(t, in, 50<<20)

	for _, st := range []struct {
		name  string
		store func(t *testing.T) func(c *server.Config)
	}{
		{"memory", func(*testing.T) func(c *server.Config) { return func(c *server.Config) { c.Store.Type = "memory" } }},
		{"sqlite", func(*testing.T) func(c *server.Config) { return func(*server.Config) {} }},
		{"postgres", func(t *testing.T) func(c *server.Config) {
			url := pgtest.NewDatabase(t)
			return func(c *server.Config) {
				c.Server.TokenKey, c.Store.Type, c.Store.Postgres.URL = stdinTokenKey, "postgres", url
			}
		}},
		{"aws", func(t *testing.T) func(c *server.Config) {
			stores := awstest.Start(t).NewConfig(t)
			moto := mototest.For(t)
			bucket := mototest.NewName("spool-stdin")
			s3c := s3.NewFromConfig(moto.AWSConfig(), func(o *s3.Options) { o.UsePathStyle = true })
			if _, err := s3c.CreateBucket(context.Background(), &s3.CreateBucketInput{Bucket: aws.String(bucket)}); err != nil {
				t.Fatal(err)
			}
			return func(c *server.Config) {
				c.Server.TokenKey, c.Store.Type = stdinTokenKey, "aws"
				c.Store.AWS = server.AWS{DynamoDBEndpoint: stores.DynamoDBEndpoint, SQSEndpoint: stores.SQSEndpoint,
					JobsTable: stores.JobsTable, EventsTable: stores.EventsTable, QueuePrefix: stores.QueuePrefix,
					AutoCreateQueues: true, DeadLetterCheckInterval: stores.DeadLetterCheckInterval}
				c.Blobs.S3 = server.BlobsS3{Bucket: bucket, Endpoint: moto.URL, PathStyle: true}
			}
		}},
	} {
		t.Run(st.name, func(t *testing.T) {
			t.Parallel()
			srv := spooltest.NewServer(t, spooltest.Config{Server: st.store(t)})
			spooltest.NewWorker(t, srv, worker.Config{})
			began := time.Now()
			r := run(srv, "submit", "-f", "--stdin", in, "--", "sha256sum")
			if r.code != 0 || strings.Fields(r.stdout)[0] != want {
				t.Fatalf("exit %d, stdout %q, stderr %s; want the file's SHA-256 %s", r.code, r.stdout, r.stderr, want)
			}
			t.Logf("%s: 50 MB stdin submitted, run and followed in %v", st.name, time.Since(began).Round(time.Millisecond))
			c := srv.Client()
			jobs, _, err := c.JobsPage(context.Background(), client.ListParams{})
			if err != nil || len(jobs) != 1 {
				t.Fatalf("jobs: %v %v", jobs, err)
			}
			first := jobs[0]
			if first.Params.StdinSize != 50<<20 || len(first.Params.Stdin) != 0 {
				t.Fatalf("the job keeps %d bytes of stdin inline, %d beside it; want all 50 MB beside it", len(first.Params.Stdin), first.Params.StdinSize)
			}

			rerun, err := c.Rerun(context.Background(), first.ID, "")
			if err != nil {
				t.Fatal(err)
			}
			srv.WaitJob(t, rerun.ID)
			if out := run(srv, "logs", rerun.ID); out.code != 0 || strings.Fields(out.stdout)[0] != want {
				t.Fatalf("the rerun's output: exit %d, %q %s", out.code, out.stdout, out.stderr)
			}

			if r := run(srv, "jobs", "delete", first.ID); r.code != 0 {
				t.Fatalf("jobs delete: exit %d, %s", r.code, r.stderr)
			}
			if st.name == "sqlite" {
				dir := filepath.Join(srv.Config().Server.DataDir, "blobs")
				if left := filesUnder(t, dir, first.ID); len(left) != 0 {
					t.Errorf("the deleted job's blobs are still there: %v", left)
				}
				if left := filesUnder(t, dir, rerun.ID); len(left) == 0 {
					t.Errorf("the rerun's stdin went with the first job")
				}
			}
		})
	}
}

// writeRandom writes n random bytes to path and returns their SHA-256.
func writeRandom(t *testing.T, path string, n int64) string {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sum := sha256.New()
	if _, err := io.CopyN(io.MultiWriter(f, sum), rand.Reader, n); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(sum.Sum(nil))
}

// filesUnder lists the files under dir whose path names id.
func filesUnder(t *testing.T, dir, id string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() && strings.Contains(path, id) {
			out = append(out, path)
		}
		return nil
	})
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	return out
}
