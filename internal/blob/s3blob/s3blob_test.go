package s3blob_test

import (
	"bytes"
	"context"
	"io"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"go.uber.org/goleak"

	"github.com/spool-run/spool/internal/blob"
	"github.com/spool-run/spool/internal/blob/blobtest"
	"github.com/spool-run/spool/internal/blob/s3blob"
	"github.com/spool-run/spool/internal/mototest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(mototest.Runner(m)) }

// newBucket makes a bucket on the package's moto_server and returns a
// configuration of a store on it.
func newBucket(t *testing.T) s3blob.Config {
	t.Helper()
	srv := mototest.Shared(t)
	cfg := s3blob.Config{Bucket: mototest.NewName("blobs"), Prefix: "spool/", Endpoint: srv.URL, PathStyle: true, PartSizeMB: s3blob.MinPartSizeMB}
	client := s3.NewFromConfig(srv.AWSConfig(), func(o *s3.Options) { o.UsePathStyle = true })
	if _, err := client.CreateBucket(t.Context(), &s3.CreateBucketInput{Bucket: aws.String(cfg.Bucket)}); err != nil {
		t.Fatalf("creating bucket %s on moto_server: %v", cfg.Bucket, err)
	}
	return cfg
}

func open(t *testing.T, cfg s3blob.Config) *s3blob.Store {
	t.Helper()
	s, err := s3blob.Open(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func TestConformance(t *testing.T) {
	blobtest.Run(t, func(t *testing.T) blob.Store { return open(t, newBucket(t)) })
}

// TestNothingStaged checks a blob of several parts leaves nothing under
// uploads/ once stored, nor a failed one, so the bucket holds only blobs.
func TestNothingStaged(t *testing.T) {
	cfg := newBucket(t)
	s := open(t, cfg)
	b := bytes.Repeat([]byte("0123456789abcdef"), 11<<20/16) // three parts of 5 MB
	if _, err := s.Put(t.Context(), "big", bytes.NewReader(b)); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := s.Put(ctx, "never", bytes.NewReader(b)); err == nil {
		t.Fatal("a Put with a cancelled context succeeded")
	}
	srv := mototest.Shared(t)
	client := s3.NewFromConfig(srv.AWSConfig(), func(o *s3.Options) { o.UsePathStyle = true })
	out, err := client.ListObjectsV2(t.Context(), &s3.ListObjectsV2Input{Bucket: aws.String(cfg.Bucket)})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, o := range out.Contents {
		names = append(names, aws.ToString(o.Key))
	}
	if len(names) != 1 || names[0] != "spool/blobs/big" {
		t.Errorf("the bucket holds %q, want only spool/blobs/big", names)
	}
	ups, err := client.ListMultipartUploads(t.Context(), &s3.ListMultipartUploadsInput{Bucket: aws.String(cfg.Bucket)})
	if err != nil {
		t.Fatal(err)
	}
	if len(ups.Uploads) != 0 {
		t.Errorf("%d multipart uploads are left open", len(ups.Uploads))
	}
	rc, info, err := s.Get(t.Context(), "big", 0, -1)
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	got, _ := io.ReadAll(rc)
	if !bytes.Equal(got, b) || info.SHA256 == "" {
		t.Errorf("the blob of three parts reads back as %d bytes (want %d), sha256 %q", len(got), len(b), info.SHA256)
	}
}

// TestCopyInParts stores a blob past the store's single-copy limit (made
// small here; S3's is 5 GB), which is then copied to its name in parts.
func TestCopyInParts(t *testing.T) {
	s := open(t, newBucket(t))
	s3blob.SetCopyLimit(s, 6<<20, 5<<20)
	blobtest.Large(t, s, 23<<20, blobtest.LargeGrowth)
}

// TestMissingBucket checks a bucket that is not there is said at Open.
func TestMissingBucket(t *testing.T) {
	srv := mototest.Shared(t)
	_, err := s3blob.Open(t.Context(), s3blob.Config{Bucket: "no-such-bucket-here", Endpoint: srv.URL, PathStyle: true})
	if err == nil {
		t.Fatal("Open on a missing bucket succeeded")
	}
	t.Log(err)
}
