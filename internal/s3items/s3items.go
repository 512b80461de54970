// Package s3items reads a scatter's items out of S3 for the server: one
// object of items (JSON Lines, a JSON array or CSV, through package
// itembatch's readers) or a listing of the objects under a prefix, one item
// each. Everything streams: an object is read as it arrives and a listing
// a page at a time, so an input of any size is read in bounded memory.
package s3items

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"iter"
	"path"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/smithy-go"

	"github.com/spool-run/spool/internal/awsconf"
	"github.com/spool-run/spool/itembatch"
)

// Config says how the server reaches users' buckets (scatter.s3 in its
// configuration). Credentials come from the AWS SDK's default chain (the
// environment, the shared files, the instance's role).
type Config struct {
	// Region of the buckets. Empty: store.aws's, else the SDK's usual
	// sources; with an endpoint and no region anywhere, us-east-1.
	Region string `yaml:"region"`
	// Endpoint overrides S3's (moto_server, MinIO, a VPC endpoint); empty:
	// store.aws's endpoint, if any. Set PathStyle for servers that do not
	// answer on bucket.host names.
	Endpoint  string `yaml:"endpoint"`
	PathStyle bool   `yaml:"path_style"`
}

// ErrUnreachable is wrapped by the errors of a bucket or object the server
// cannot read: it is missing, or the server's credentials do not allow it.
var ErrUnreachable = errors.New("S3 items unreachable")

// ErrChanged is wrapped by the error of an object replaced while a scatter
// read it.
var ErrChanged = errors.New("S3 items changed")

// Location is an object ("s3://bucket/key") or a prefix
// ("s3://bucket/prefix/").
type Location struct {
	Bucket, Key string
}

// String is the location as an s3:// URL.
func (l Location) String() string { return "s3://" + l.Bucket + "/" + l.Key }

// IsS3 reports whether s names a place in S3 rather than a local file.
func IsS3(s string) bool { return strings.HasPrefix(s, "s3://") }

// Parse reads an s3:// URL. A prefix may be empty (every object of the
// bucket); an object's key may not.
func Parse(s string, prefix bool) (Location, error) {
	rest, ok := strings.CutPrefix(s, "s3://")
	if !ok {
		return Location{}, fmt.Errorf("%q is not an S3 location: write s3://bucket/key", s)
	}
	bucket, key, _ := strings.Cut(rest, "/")
	if bucket == "" {
		return Location{}, fmt.Errorf("%q names no bucket: write s3://bucket/key", s)
	}
	if !prefix && (key == "" || strings.HasSuffix(key, "/")) {
		return Location{}, fmt.Errorf("%q names no object: write s3://%s/path/to/items.jsonl (or use --items-prefix for every object under a prefix)", s, bucket)
	}
	return Location{Bucket: bucket, Key: key}, nil
}

// Format is how an object's items are written: "csv" when format says so
// or, when format is empty, when the key ends in .csv; "json" otherwise.
func Format(format, key string) string {
	if format == "" && strings.EqualFold(path.Ext(key), ".csv") {
		return "csv"
	}
	if format == "" || format == "jsonl" {
		return "json"
	}
	return format
}

// Client reads items from S3. Its methods are safe for concurrent use.
type Client struct {
	s3 *s3.Client
}

// Open makes a client of cfg with the SDK's default credential chain. It
// calls no AWS service: a bucket is first reached when a scatter reads it.
func Open(ctx context.Context, cfg Config) (*Client, error) {
	awsCfg, err := awsconf.Load(ctx, cfg.Region, cfg.Endpoint != "")
	if err != nil {
		return nil, fmt.Errorf("loading the AWS configuration for scatter items (scatter.s3): %w", err)
	}
	return New(awsCfg, cfg), nil
}

// New is Open with an SDK configuration made elsewhere (a test's).
func New(awsCfg aws.Config, cfg Config) *Client {
	return &Client{s3: s3.NewFromConfig(awsCfg, func(o *s3.Options) {
		if cfg.Endpoint != "" {
			o.BaseEndpoint = aws.String(cfg.Endpoint)
		}
		o.UsePathStyle = cfg.PathStyle
		// S3 look-alikes send no checksums, and the SDK would log a line
		// for every object read from them.
		o.DisableLogOutputChecksumValidationSkipped = true
	})}
}

// Items is a source of items, one at a time, as an itembatch.ItemReader
// gives them.
type Items interface {
	// Next returns the next item, or io.EOF after the last.
	Next() (itembatch.Item, error)
	// BytesRead tells how far the reading has come: bytes of an object,
	// objects of a listing.
	BytesRead() int64
	// Close releases the connection.
	Close() error
}

// Object opens the items of one object, written as format says ("json" or
// "csv"), and returns its ETag. With etag set, it opens that version of
// the object only: another is an error wrapping ErrChanged.
func (c *Client) Object(ctx context.Context, loc Location, format, etag string) (Items, string, error) {
	in := &s3.GetObjectInput{Bucket: aws.String(loc.Bucket), Key: aws.String(loc.Key)}
	if etag != "" {
		in.IfMatch = aws.String(etag)
	}
	out, err := c.s3.GetObject(ctx, in)
	var ae smithy.APIError
	if etag != "" && errors.As(err, &ae) && ae.ErrorCode() == "PreconditionFailed" {
		return nil, "", fmt.Errorf("%w: %s was replaced since the scatter began reading it (its ETag was %s): start a new scatter to read the new one", ErrChanged, loc, etag)
	}
	if err != nil {
		return nil, "", unreachable(loc, err)
	}
	body := &failNaming{r: out.Body, loc: loc}
	ir := itembatch.NewItemReader(body)
	if format == "csv" {
		ir = itembatch.NewCSVItemReader(body)
	}
	return objectItems{ir, out.Body, loc}, aws.ToString(out.ETag), nil
}

type objectItems struct {
	*itembatch.ItemReader
	body io.Closer
	loc  Location
}

func (o objectItems) Next() (itembatch.Item, error) {
	it, err := o.ItemReader.Next()
	if err != nil && err != io.EOF {
		return nil, fmt.Errorf("%s: %w", o.loc, err)
	}
	return it, err
}

func (o objectItems) Close() error { return o.body.Close() }

// failNaming says which object a read broke off in.
type failNaming struct {
	r   io.Reader
	loc Location
}

func (f *failNaming) Read(p []byte) (int, error) {
	n, err := f.r.Read(p)
	if err != nil && err != io.EOF {
		err = fmt.Errorf("%w: reading %s broke off: %v", ErrUnreachable, f.loc, err)
	}
	return n, err
}

// unreachable says what to check about a location the server cannot read.
func unreachable(loc Location, err error) error {
	var ae smithy.APIError
	if errors.As(err, &ae) {
		switch ae.ErrorCode() {
		case "NoSuchBucket":
			return fmt.Errorf("%w: there is no bucket %q (in %s): check the bucket's name, and that scatter.s3.region and scatter.s3.endpoint point where it is", ErrUnreachable, loc.Bucket, loc)
		case "NoSuchKey", "NotFound":
			return fmt.Errorf("%w: there is no object %s: check the key (aws s3 ls %s)", ErrUnreachable, loc, loc)
		case "AccessDenied", "Forbidden", "InvalidAccessKeyId", "SignatureDoesNotMatch":
			return fmt.Errorf("%w: the server may not read %s (%s): give the server's AWS credentials s3:GetObject and s3:ListBucket on bucket %q", ErrUnreachable, loc, ae.ErrorCode(), loc.Bucket)
		}
	}
	return fmt.Errorf("%w: reading %s: %v (check that the server reaches S3: scatter.s3.region, scatter.s3.endpoint and its AWS credentials)", ErrUnreachable, loc, err)
}

// Put writes body as the object at loc.
func (c *Client) Put(ctx context.Context, loc Location, body []byte) error {
	_, err := c.s3.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(loc.Bucket), Key: aws.String(loc.Key), Body: bytes.NewReader(body), ContentType: aws.String("application/json")})
	if err != nil {
		return unreachableWriting(loc, err)
	}
	return nil
}

// CheckBucket checks that the bucket of loc exists and answers this
// server, so that a scatter whose results could not be written is refused
// before it runs.
func (c *Client) CheckBucket(ctx context.Context, loc Location) error {
	_, err := c.s3.HeadBucket(ctx, &s3.HeadBucketInput{Bucket: aws.String(loc.Bucket)})
	if err != nil {
		return unreachableWriting(loc, err)
	}
	return nil
}

// unreachableWriting says what to check about a location the server
// cannot write.
func unreachableWriting(loc Location, err error) error {
	var ae smithy.APIError
	var nf *types.NotFound
	switch {
	case errors.As(err, &nf):
		return fmt.Errorf("%w: there is no bucket %q (in %s): check the bucket's name, and that scatter.s3.region and scatter.s3.endpoint point where it is", ErrUnreachable, loc.Bucket, loc)
	case errors.As(err, &ae) && ae.ErrorCode() == "NoSuchBucket":
		return fmt.Errorf("%w: there is no bucket %q (in %s): check the bucket's name, and that scatter.s3.region and scatter.s3.endpoint point where it is", ErrUnreachable, loc.Bucket, loc)
	case errors.As(err, &ae) && (ae.ErrorCode() == "AccessDenied" || ae.ErrorCode() == "Forbidden"):
		return fmt.Errorf("%w: the server may not write %s (%s): give the server's AWS credentials s3:PutObject and s3:ListBucket on bucket %q", ErrUnreachable, loc, ae.ErrorCode(), loc.Bucket)
	}
	return fmt.Errorf("%w: writing %s: %v (check that the server reaches S3: scatter.s3.region, scatter.s3.endpoint and its AWS credentials)", ErrUnreachable, loc, err)
}

// Sizes yields the key and size of every object under prefix, in key
// order.
func (c *Client) Sizes(ctx context.Context, prefix Location) iter.Seq2[Object, error] {
	return func(yield func(Object, error) bool) {
		p := s3.NewListObjectsV2Paginator(c.s3, &s3.ListObjectsV2Input{Bucket: aws.String(prefix.Bucket), Prefix: aws.String(prefix.Key)})
		for p.HasMorePages() {
			out, err := p.NextPage(ctx)
			if err != nil {
				yield(Object{}, unreachable(prefix, err))
				return
			}
			for _, o := range out.Contents {
				if !yield(Object{Key: aws.ToString(o.Key), Size: aws.ToInt64(o.Size), Etag: aws.ToString(o.ETag)}, nil) {
					return
				}
			}
		}
	}
}
