package s3blob

import (
	"errors"
	"fmt"
)

// Config is the S3 blob store's configuration (blobs.s3 in the server's
// configuration). Only Bucket needs setting.
type Config struct {
	// Bucket holds the blobs; spool does not create it.
	Bucket string `yaml:"bucket"`
	// Prefix is put before every object's name, so spool can share a
	// bucket ("spool/"). Blobs live under Prefix+"blobs/", Puts in
	// progress under Prefix+"uploads/".
	Prefix string `yaml:"prefix"`
	// Region of the bucket. Empty: the SDK's usual sources (AWS_REGION,
	// the shared config file); with an endpoint and no region anywhere,
	// us-east-1.
	Region string `yaml:"region"`
	// Endpoint overrides S3's (a local test server such as moto_server,
	// MinIO, a VPC endpoint). Set PathStyle for servers that do not answer
	// on bucket.host names.
	Endpoint  string `yaml:"endpoint"`
	PathStyle bool   `yaml:"path_style"`
	// PartSizeMB is the size of each part of a multipart upload, and so
	// the memory one Put holds (default 8, at least 5, S3's smallest).
	// A blob smaller than one part is sent in one request.
	PartSizeMB int `yaml:"part_size_mb"`
}

// DefaultPartSizeMB and MinPartSizeMB bound PartSizeMB.
const (
	DefaultPartSizeMB = 8
	MinPartSizeMB     = 5
	// maxParts is S3's limit on a multipart upload's parts.
	maxParts = 10000
)

// ErrNoBucket: blobs on S3 without a bucket.
var ErrNoBucket = errors.New("blobs.s3.bucket is not set: name the S3 bucket for jobs' files (or set SPOOL_BLOBS_S3_BUCKET)")

// Validate checks the configuration without calling AWS.
func (c Config) Validate() error {
	if c.Bucket == "" {
		return ErrNoBucket
	}
	if c.PartSizeMB != 0 && c.PartSizeMB < MinPartSizeMB {
		return fmt.Errorf("blobs.s3.part_size_mb %d is below S3's smallest part, %d MB", c.PartSizeMB, MinPartSizeMB)
	}
	return nil
}

func (c Config) partSize() int64 {
	if c.PartSizeMB == 0 {
		return DefaultPartSizeMB << 20
	}
	return int64(c.PartSizeMB) << 20
}
