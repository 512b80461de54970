// Package s3blob keeps blobs in an S3 bucket, for a server on AWS.
//
// S3 keeps a blob's checksum as object metadata (x-amz-meta-sha256), which
// must be given when the object is made. A blob smaller than one part goes
// up in one PutObject, with its checksum, once its bytes are read. A larger
// one goes up as a multipart upload to a staging name under uploads/, and
// is then copied inside S3 to its own name with its checksum (the copy is
// what makes it visible, whole) and the staging object deleted. A Put that
// fails aborts its upload, so nothing of it is listed.
package s3blob

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"iter"
	"net/url"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/smithy-go"

	"github.com/spool-run/spool/internal/awsconf"
	"github.com/spool-run/spool/internal/blob"
)

const (
	blobsDir   = "blobs/"
	uploadsDir = "uploads/"
	shaKey     = "sha256"
	// copyLimit is the largest object one CopyObject copies; larger ones
	// are copied in parts of copyPartSize.
	copyLimit    = 5 << 30
	copyPartSize = 1 << 30
	// deleteBatch is the most keys one DeleteObjects takes.
	deleteBatch = 1000
)

// Store is the blobs of one bucket (and prefix).
type Store struct {
	client   *s3.Client
	bucket   string
	base     string // Prefix + blobsDir
	uploads  string // Prefix + uploadsDir
	partSize int64
	// copyLimit and copyPartSize are the constants, changed by tests.
	copyLimit, copyPartSize int64
}

var _ blob.Store = (*Store)(nil)

// Open checks cfg and that the bucket answers.
func Open(ctx context.Context, cfg Config) (*Store, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	awsCfg, err := awsconf.Load(ctx, cfg.Region, cfg.Endpoint != "")
	if err != nil {
		return nil, fmt.Errorf("loading the AWS configuration for blobs: %w", err)
	}
	if awsCfg.Region == "" {
		return nil, errors.New("no AWS region for the blob bucket: set blobs.s3.region or AWS_REGION")
	}
	return New(ctx, awsCfg, cfg)
}

// New is Open with an SDK configuration made elsewhere (a test's).
func New(ctx context.Context, awsCfg aws.Config, cfg Config) (*Store, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	client := s3.NewFromConfig(awsCfg, func(o *s3.Options) {
		if cfg.Endpoint != "" {
			o.BaseEndpoint = aws.String(cfg.Endpoint)
		}
		o.UsePathStyle = cfg.PathStyle
	})
	if _, err := client.HeadBucket(ctx, &s3.HeadBucketInput{Bucket: aws.String(cfg.Bucket)}); isNotFound(err) {
		return nil, fmt.Errorf("there is no S3 bucket %q (blobs.s3.bucket): spool does not create it; make it with `aws s3 mb s3://%s`", cfg.Bucket, cfg.Bucket)
	} else if err != nil {
		return nil, fmt.Errorf("the blob bucket %q (blobs.s3.bucket) does not answer: %w", cfg.Bucket, err)
	}
	return &Store{
		client: client, bucket: cfg.Bucket,
		base: cfg.Prefix + blobsDir, uploads: cfg.Prefix + uploadsDir,
		partSize: cfg.partSize(), copyLimit: copyLimit, copyPartSize: copyPartSize,
	}, nil
}

// Close does nothing: the client holds only idle connections.
func (s *Store) Close() error { return nil }

func (s *Store) object(key string) *string { return aws.String(s.base + key) }

// Put implements blob.Store.
func (s *Store) Put(ctx context.Context, key string, r io.Reader) (blob.Info, error) {
	if err := blob.CheckKey(key); err != nil {
		return blob.Info{}, err
	}
	d := blob.NewDigest()
	src := d.Reader(ctx, r)
	buf := make([]byte, s.partSize)
	n, err := io.ReadFull(src, buf)
	switch err {
	case io.EOF, io.ErrUnexpectedEOF:
		_, err = s.client.PutObject(ctx, &s3.PutObjectInput{
			Bucket: aws.String(s.bucket), Key: s.object(key),
			Body: bytes.NewReader(buf[:n]), ContentLength: aws.Int64(int64(n)),
			Metadata: map[string]string{shaKey: d.Sum()},
		})
	case nil:
		err = s.putLarge(ctx, key, buf, src, d)
	}
	if err != nil {
		return blob.Info{}, fmt.Errorf("storing blob %q in S3: %w", key, err)
	}
	// S3 gives an object's time only when asked. The blob is stored
	// whatever the asking gives: a Delete or another Put of the key in
	// between, or a failed request, leaves this Put's own clock.
	info := blob.Info{Key: key, Size: d.Size(), SHA256: d.Sum(), Modified: time.Now()}
	if st, err := s.Stat(ctx, key); err == nil && st.SHA256 == info.SHA256 {
		info.Modified = st.Modified
	}
	return info, nil
}

// putLarge uploads buf (full) and the rest of src in parts to a staging
// object, then copies it to key with its checksum.
func (s *Store) putLarge(ctx context.Context, key string, buf []byte, src io.Reader, d *blob.Digest) (err error) {
	staging := aws.String(s.uploads + randomName())
	up, err := s.client.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{Bucket: aws.String(s.bucket), Key: staging})
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			// The context may be what failed: the abort still must go.
			actx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
			defer cancel()
			_, _ = s.client.AbortMultipartUpload(actx, &s3.AbortMultipartUploadInput{Bucket: aws.String(s.bucket), Key: staging, UploadId: up.UploadId})
		}
	}()
	var parts []types.CompletedPart
	n := len(buf)
	for {
		if len(parts) == maxParts {
			return fmt.Errorf("the blob is larger than %d parts of %d MB: raise blobs.s3.part_size_mb", maxParts, s.partSize>>20)
		}
		num := aws.Int32(int32(len(parts) + 1))
		out, err := s.client.UploadPart(ctx, &s3.UploadPartInput{
			Bucket: aws.String(s.bucket), Key: staging, UploadId: up.UploadId, PartNumber: num,
			Body: bytes.NewReader(buf[:n]), ContentLength: aws.Int64(int64(n)),
		})
		if err != nil {
			return err
		}
		parts = append(parts, types.CompletedPart{ETag: out.ETag, PartNumber: num})
		var rerr error
		n, rerr = io.ReadFull(src, buf)
		if rerr == io.EOF {
			break
		}
		if rerr != nil && rerr != io.ErrUnexpectedEOF {
			return rerr
		}
	}
	if _, err := s.client.CompleteMultipartUpload(ctx, &s3.CompleteMultipartUploadInput{
		Bucket: aws.String(s.bucket), Key: staging, UploadId: up.UploadId,
		MultipartUpload: &types.CompletedMultipartUpload{Parts: parts},
	}); err != nil {
		return err
	}
	defer func() {
		dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		defer cancel()
		_, _ = s.client.DeleteObject(dctx, &s3.DeleteObjectInput{Bucket: aws.String(s.bucket), Key: staging})
	}()
	if err := ctx.Err(); err != nil {
		return err
	}
	return s.copy(ctx, *staging, key, d.Size(), d.Sum())
}

// copy copies the staging object src to key, with its checksum.
func (s *Store) copy(ctx context.Context, src, key string, size int64, sum string) error {
	source := aws.String(s.bucket + "/" + url.PathEscape(src))
	meta := map[string]string{shaKey: sum}
	if size <= s.copyLimit {
		_, err := s.client.CopyObject(ctx, &s3.CopyObjectInput{
			Bucket: aws.String(s.bucket), Key: s.object(key), CopySource: source,
			Metadata: meta, MetadataDirective: types.MetadataDirectiveReplace,
		})
		return err
	}
	up, err := s.client.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{Bucket: aws.String(s.bucket), Key: s.object(key), Metadata: meta})
	if err != nil {
		return err
	}
	var parts []types.CompletedPart
	for off := int64(0); off < size; off += s.copyPartSize {
		num := aws.Int32(int32(len(parts) + 1))
		out, err := s.client.UploadPartCopy(ctx, &s3.UploadPartCopyInput{
			Bucket: aws.String(s.bucket), Key: s.object(key), UploadId: up.UploadId, PartNumber: num,
			CopySource: source, CopySourceRange: aws.String(fmt.Sprintf("bytes=%d-%d", off, min(off+s.copyPartSize, size)-1)),
		})
		if err != nil {
			actx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
			defer cancel()
			_, _ = s.client.AbortMultipartUpload(actx, &s3.AbortMultipartUploadInput{Bucket: aws.String(s.bucket), Key: s.object(key), UploadId: up.UploadId})
			return err
		}
		parts = append(parts, types.CompletedPart{ETag: out.CopyPartResult.ETag, PartNumber: num})
	}
	_, err = s.client.CompleteMultipartUpload(ctx, &s3.CompleteMultipartUploadInput{
		Bucket: aws.String(s.bucket), Key: s.object(key), UploadId: up.UploadId,
		MultipartUpload: &types.CompletedMultipartUpload{Parts: parts},
	})
	return err
}

func randomName() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// isNotFound says whether err is S3's "no such object".
func isNotFound(err error) bool {
	var api smithy.APIError
	if errors.As(err, &api) {
		switch api.ErrorCode() {
		case "NotFound", "NoSuchKey":
			return true
		}
	}
	return false
}

// Stat implements blob.Store.
func (s *Store) Stat(ctx context.Context, key string) (blob.Info, error) {
	info, _, err := s.head(ctx, key)
	return info, err
}

func (s *Store) head(ctx context.Context, key string) (blob.Info, string, error) {
	if err := blob.CheckKey(key); err != nil {
		return blob.Info{}, "", err
	}
	out, err := s.client.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String(s.bucket), Key: s.object(key)})
	if isNotFound(err) {
		return blob.Info{}, "", blob.NotFound(key)
	}
	if err != nil {
		return blob.Info{}, "", fmt.Errorf("reading blob %q from S3: %w", key, err)
	}
	return blob.Info{Key: key, Size: aws.ToInt64(out.ContentLength), SHA256: out.Metadata[shaKey], Modified: aws.ToTime(out.LastModified)}, aws.ToString(out.ETag), nil
}

// Get implements blob.Store. The range is read with the ETag the object's
// description had, so the bytes are of the blob described; a Put that
// replaced it in between makes Get describe and read it again.
func (s *Store) Get(ctx context.Context, key string, offset, length int64) (io.ReadCloser, blob.Info, error) {
	for range 3 {
		info, etag, err := s.head(ctx, key)
		if err != nil {
			return nil, blob.Info{}, err
		}
		start, count, err := blob.Clip(info.Size, offset, length)
		if err != nil {
			return nil, blob.Info{}, err
		}
		if count == 0 {
			return blob.Empty(), info, nil
		}
		out, err := s.client.GetObject(ctx, &s3.GetObjectInput{
			Bucket: aws.String(s.bucket), Key: s.object(key), IfMatch: aws.String(etag),
			Range: aws.String(fmt.Sprintf("bytes=%d-%d", start, start+count-1)),
		})
		var api smithy.APIError
		if errors.As(err, &api) && api.ErrorCode() == "PreconditionFailed" {
			continue
		}
		if isNotFound(err) {
			return nil, blob.Info{}, blob.NotFound(key)
		}
		if err != nil {
			return nil, blob.Info{}, fmt.Errorf("reading blob %q from S3: %w", key, err)
		}
		return out.Body, info, nil
	}
	return nil, blob.Info{}, fmt.Errorf("reading blob %q from S3: it kept changing while being read", key)
}

// List implements blob.Store. S3 lists in byte order of the names, as the
// seam wants. A listing has no checksums (S3 gives metadata only object by
// object): Stat a blob for its own.
func (s *Store) List(ctx context.Context, prefix string) iter.Seq2[blob.Info, error] {
	return func(yield func(blob.Info, error) bool) {
		if err := blob.CheckPrefix(prefix); err != nil {
			yield(blob.Info{}, err)
			return
		}
		pages := s3.NewListObjectsV2Paginator(s.client, &s3.ListObjectsV2Input{Bucket: aws.String(s.bucket), Prefix: aws.String(s.base + prefix)})
		for pages.HasMorePages() {
			page, err := pages.NextPage(ctx)
			if err != nil {
				yield(blob.Info{}, fmt.Errorf("listing blobs under %q in S3: %w", prefix, err))
				return
			}
			for _, o := range page.Contents {
				info := blob.Info{Key: strings.TrimPrefix(aws.ToString(o.Key), s.base), Size: aws.ToInt64(o.Size), Modified: aws.ToTime(o.LastModified)}
				if !yield(info, nil) {
					return
				}
			}
		}
	}
}

// Delete implements blob.Store.
func (s *Store) Delete(ctx context.Context, key string) error {
	if err := blob.CheckKey(key); err != nil {
		return err
	}
	if _, err := s.client.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(s.bucket), Key: s.object(key)}); err != nil && !isNotFound(err) {
		return fmt.Errorf("deleting blob %q from S3: %w", key, err)
	}
	return nil
}

// DeletePrefix implements blob.Store, up to 1000 blobs a request.
func (s *Store) DeletePrefix(ctx context.Context, prefix string) (int, error) {
	if err := blob.CheckDeletePrefix(prefix); err != nil {
		return 0, err
	}
	deleted := 0
	var batch []types.ObjectIdentifier
	flush := func() error {
		if len(batch) == 0 {
			return nil
		}
		out, err := s.client.DeleteObjects(ctx, &s3.DeleteObjectsInput{Bucket: aws.String(s.bucket), Delete: &types.Delete{Objects: batch, Quiet: aws.Bool(true)}})
		if err != nil {
			return err
		}
		if len(out.Errors) > 0 {
			e := out.Errors[0]
			return fmt.Errorf("%d of %d not deleted, %q first: %s", len(out.Errors), len(batch), aws.ToString(e.Key), aws.ToString(e.Message))
		}
		deleted += len(batch)
		batch = batch[:0]
		return nil
	}
	for info, err := range s.List(ctx, prefix) {
		if err != nil {
			return deleted, err
		}
		batch = append(batch, types.ObjectIdentifier{Key: s.object(info.Key)})
		if len(batch) == deleteBatch {
			if err := flush(); err != nil {
				return deleted, fmt.Errorf("deleting blobs under %q from S3: %w", prefix, err)
			}
		}
	}
	if err := flush(); err != nil {
		return deleted, fmt.Errorf("deleting blobs under %q from S3: %w", prefix, err)
	}
	return deleted, nil
}
