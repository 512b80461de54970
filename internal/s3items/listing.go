package s3items

import (
	"context"
	"encoding/json"
	"io"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/spool-run/spool/itembatch"
)

// Object is the item of one listed object. Its fields are named as those
// of Step Functions' S3 listing reader, so that a job written for a
// Distributed Map over a prefix reads spool's items unchanged.
type Object struct {
	Etag string
	Key  string
	// LastModified is in seconds since 1970.
	LastModified int64
	Size         int64
	StorageClass string `json:",omitempty"`
}

// Listing opens the items of every object under prefix, in key order, a
// page of ListObjectsV2 at a time.
func (c *Client) Listing(ctx context.Context, prefix Location) Items {
	return &listing{ctx: ctx, c: c, loc: prefix}
}

type listing struct {
	ctx   context.Context
	c     *Client
	loc   Location
	page  []Object
	token *string
	done  bool
	count int64
}

func (l *listing) Next() (itembatch.Item, error) {
	for len(l.page) == 0 {
		if l.done {
			return nil, io.EOF
		}
		out, err := l.c.s3.ListObjectsV2(l.ctx, &s3.ListObjectsV2Input{
			Bucket: aws.String(l.loc.Bucket), Prefix: aws.String(l.loc.Key), ContinuationToken: l.token,
		})
		if err != nil {
			return nil, unreachable(l.loc, err)
		}
		for _, o := range out.Contents {
			obj := Object{Etag: aws.ToString(o.ETag), Key: aws.ToString(o.Key), Size: aws.ToInt64(o.Size), StorageClass: string(o.StorageClass)}
			if o.LastModified != nil {
				obj.LastModified = o.LastModified.Unix()
			}
			l.page = append(l.page, obj)
		}
		l.token = out.NextContinuationToken
		l.done = !aws.ToBool(out.IsTruncated) || l.token == nil
	}
	obj := l.page[0]
	l.page = l.page[1:]
	l.count++
	b, err := json.Marshal(obj)
	return b, err
}

func (l *listing) BytesRead() int64 { return l.count }

func (l *listing) Close() error { return nil }
