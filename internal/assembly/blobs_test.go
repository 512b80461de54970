package assembly_test

import (
	"context"
	"encoding/base64"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/spool-run/spool/internal/assembly"
	"github.com/spool-run/spool/internal/config"
	"github.com/spool-run/spool/internal/mototest"
	"github.com/spool-run/spool/internal/store/backends/pgstore/pgtest"
)

// startWith starts a server on cfg (a free loopback port, a fresh data
// directory), stopped when t ends.
func startWith(t *testing.T, tweak func(*config.Config)) (*assembly.Server, *config.Config) {
	t.Helper()
	cfg := config.Default()
	cfg.Server.Addr, cfg.Server.DataDir = "127.0.0.1:0", t.TempDir()
	tweak(cfg)
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	srv, err := assembly.Start(context.Background(), cfg, assembly.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Stop(context.Background()) })
	return srv, cfg
}

// blobRoundTrip puts a blob through the server's blob store and reads it back.
func blobRoundTrip(t *testing.T, srv *assembly.Server) {
	t.Helper()
	b := srv.Blobs()
	if b == nil {
		t.Fatal("the server has no blob store")
	}
	ctx := context.Background()
	if _, err := b.Put(ctx, "job-1/artifact.txt", strings.NewReader("made by job 1")); err != nil {
		t.Fatal(err)
	}
	rc, info, err := b.Get(ctx, "job-1/artifact.txt", 8, -1)
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	got, _ := io.ReadAll(rc)
	if string(got) != "job 1" || info.Size != 13 {
		t.Fatalf("read back %q (size %d)", got, info.Size)
	}
}

// TestBlobsBesideSQLite: a server on SQLite keeps blobs in its data
// directory, and they are there after a restart.
func TestBlobsBesideSQLite(t *testing.T) {
	t.Parallel()
	srv, cfg := startWith(t, func(*config.Config) {})
	blobRoundTrip(t, srv)
	if _, err := os.Stat(filepath.Join(cfg.Server.DataDir, "blobs", "job-1.d", "artifact.txt.b")); err != nil {
		t.Fatalf("the blob is not under the data directory: %v", err)
	}
	if err := srv.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	again, err := assembly.Start(context.Background(), cfg, assembly.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer again.Stop(context.Background())
	if _, err := again.Blobs().Stat(context.Background(), "job-1/artifact.txt"); err != nil {
		t.Errorf("the blob is gone after a restart: %v", err)
	}
}

// TestBlobsBesideMemory: a server on the memory store keeps blobs in a
// temporary directory that goes when it stops, and writes nothing into
// its data directory for them.
func TestBlobsBesideMemory(t *testing.T) {
	t.Parallel()
	srv, cfg := startWith(t, func(c *config.Config) { c.Store.Type = "memory" })
	blobRoundTrip(t, srv)
	if _, err := os.Stat(filepath.Join(cfg.Server.DataDir, "blobs")); !os.IsNotExist(err) {
		t.Errorf("a memory server made a blob directory in its data directory: %v", err)
	}
}

// TestBlobsBesidePostgres: a server on PostgreSQL keeps blobs in the same
// database.
func TestBlobsBesidePostgres(t *testing.T) {
	t.Parallel()
	url := pgtest.NewDatabase(t)
	srv, _ := startWith(t, func(c *config.Config) {
		c.Store.Type, c.Store.Postgres.URL = "postgres", url
		c.Server.TokenKey = base64.StdEncoding.EncodeToString(testTokenKey)
	})
	blobRoundTrip(t, srv)
	var n int
	if err := pgtest.Connect(t, url).QueryRow(context.Background(), "SELECT count(*) FROM spool_blobs").Scan(&n); err != nil || n != 1 {
		t.Errorf("the job store's database holds %d blobs (%v), want 1", n, err)
	}
}

// TestBlobsInS3: blobs.type s3 puts them in the bucket, under its prefix.
func TestBlobsInS3(t *testing.T) {
	t.Parallel()
	moto := mototest.Shared(t)
	bucket := mototest.NewName("spool-blobs")
	client := s3.NewFromConfig(moto.AWSConfig(), func(o *s3.Options) { o.UsePathStyle = true })
	if _, err := client.CreateBucket(context.Background(), &s3.CreateBucketInput{Bucket: aws.String(bucket)}); err != nil {
		t.Fatal(err)
	}
	srv, _ := startWith(t, func(c *config.Config) {
		c.Blobs.Type = config.BlobsS3
		c.Blobs.S3 = config.Default().Blobs.S3
		c.Blobs.S3.Bucket, c.Blobs.S3.Prefix, c.Blobs.S3.Endpoint, c.Blobs.S3.PathStyle = bucket, "team-a/", moto.URL, true
	})
	blobRoundTrip(t, srv)
	if _, err := client.HeadObject(context.Background(), &s3.HeadObjectInput{Bucket: aws.String(bucket), Key: aws.String("team-a/blobs/job-1/artifact.txt")}); err != nil {
		t.Errorf("the blob is not in the bucket under its prefix: %v", err)
	}
}

// TestBlobsBucketMissing: a bucket that is not there stops the server at
// start, with what to do.
func TestBlobsBucketMissing(t *testing.T) {
	t.Parallel()
	moto := mototest.Shared(t)
	cfg := config.Default()
	cfg.Server.Addr, cfg.Server.DataDir = "127.0.0.1:0", t.TempDir()
	cfg.Blobs.Type = config.BlobsS3
	cfg.Blobs.S3.Bucket, cfg.Blobs.S3.Endpoint, cfg.Blobs.S3.PathStyle = "not-made-yet", moto.URL, true
	srv, err := assembly.Start(context.Background(), cfg, assembly.Options{})
	if err == nil {
		srv.Stop(context.Background())
		t.Fatal("a server started with a blob bucket that does not exist")
	}
	if !strings.Contains(err.Error(), "aws s3 mb s3://not-made-yet") {
		t.Errorf("the refusal does not say how to make the bucket: %v", err)
	}
}
