package config

import (
	"strings"
	"testing"
)

// TestBlobsFollowStore: with no blobs.type, the blob store is the one that
// goes with store.type.
func TestBlobsFollowStore(t *testing.T) {
	key := "SPOOL_SERVER_TOKEN_KEY"
	tok := "MDEyMzQ1Njc4OTAxMjM0NTY3ODkwMTIzNDU2Nzg5MDE="
	for _, c := range []struct {
		env  []string
		want string
	}{
		{nil, BlobsDir},
		{[]string{"SPOOL_STORE_TYPE", "memory"}, BlobsDir},
		{[]string{"SPOOL_STORE_TYPE", "postgres", "SPOOL_STORE_POSTGRES_URL", "postgres://x@h/db", key, tok}, BlobsPostgres},
		{[]string{"SPOOL_STORE_TYPE", "aws", key, tok}, ""},
		{[]string{"SPOOL_STORE_TYPE", "aws", "SPOOL_BLOBS_S3_BUCKET", "b-1", key, tok}, BlobsS3},
		{[]string{"SPOOL_BLOBS_TYPE", "s3", "SPOOL_BLOBS_S3_BUCKET", "b-1"}, BlobsS3},
		{[]string{"SPOOL_STORE_TYPE", "postgres", "SPOOL_STORE_POSTGRES_URL", "postgres://x@h/db", key, tok, "SPOOL_BLOBS_TYPE", "dir"}, BlobsDir},
	} {
		cfg, err := Load("", env(c.env...))
		if err != nil {
			t.Fatalf("%v: %v", c.env, err)
		}
		if got := cfg.BlobsType(); got != c.want {
			t.Errorf("%v: blobs type %q, want %q", c.env, got, c.want)
		}
	}
}

// TestBlobsRefused: a blob store that cannot work is refused at start,
// with the setting to change.
func TestBlobsRefused(t *testing.T) {
	for _, c := range []struct {
		env  []string
		want string
	}{
		{[]string{"SPOOL_BLOBS_TYPE", "disk"}, "blobs.type"},
		{[]string{"SPOOL_BLOBS_TYPE", "s3"}, "blobs.s3.bucket is not set"},
		{[]string{"SPOOL_BLOBS_TYPE", "s3", "SPOOL_BLOBS_S3_BUCKET", "b-1", "SPOOL_BLOBS_S3_PART_SIZE_MB", "1"}, "blobs.s3.part_size_mb"},
		{[]string{"SPOOL_BLOBS_TYPE", "postgres"}, "store.postgres.url is not set"},
	} {
		_, err := Load("", env(c.env...))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: err = %v, want one naming %s", c.env, err, c.want)
		}
	}
}
