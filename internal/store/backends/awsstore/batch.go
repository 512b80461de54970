package awsstore

import (
	"context"
	"errors"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/spool-run/spool"
	"github.com/spool-run/spool/internal/apierr"
	"github.com/spool-run/spool/internal/backoff"
)

// DynamoDB's batch limits.
const (
	batchWriteMax = 25
	batchGetMax   = 100
)

// Backoff for the items a batch call leaves unprocessed (DynamoDB does so
// when a partition is over its throughput): the SDK retries failed calls,
// not partly done ones, so these are retried here.
const (
	leftoverFirstWait = 50 * time.Millisecond
	leftoverMaxWait   = 2 * time.Second
	leftoverTries     = 10
)

// errLeftovers: a batch call kept leaving items unprocessed.
var errLeftovers = errors.New("DynamoDB kept leaving part of the batch unprocessed; retry later")

// retryLeftovers waits before call number try (from 0) of a batch: at
// once for the first, then with exponential backoff, giving up after
// leftoverTries retries or when ctx ends.
func retryLeftovers(ctx context.Context, try int) error {
	if try == 0 {
		return nil
	}
	if try > leftoverTries {
		return errLeftovers
	}
	return backoff.Sleep(ctx, min(leftoverFirstWait<<(try-1), leftoverMaxWait))
}

// batchGet reads items by key from one table, 100 keys a call, retrying
// unprocessed keys. Missing items are simply absent from the result.
func (s *Store) batchGet(ctx context.Context, table string, keys []item, ka types.KeysAndAttributes) ([]item, error) {
	var out []item
	for start := 0; start < len(keys); start += batchGetMax {
		ka.Keys = keys[start:min(start+batchGetMax, len(keys))]
		req := map[string]types.KeysAndAttributes{table: ka}
		for try := 0; len(req) > 0; try++ {
			if err := retryLeftovers(ctx, try); err != nil {
				return nil, apierr.Errorf(spool.ErrThrottled, "read %d items from %s: %w", len(ka.Keys), table, err)
			}
			res, err := s.clients.db.BatchGetItem(ctx, &dynamodb.BatchGetItemInput{RequestItems: req})
			if err != nil {
				return nil, awsErr(err, "read %d items from %s", len(ka.Keys), table)
			}
			out = append(out, res.Responses[table]...)
			req = res.UnprocessedKeys
		}
	}
	return out, nil
}

// putAll stores items in one table. BatchWriteItem takes no conditions:
// callers make sure (see Append) that nothing they write can overwrite
// what another writer owns.
func (s *Store) putAll(ctx context.Context, table string, items []item) error {
	reqs := make([]types.WriteRequest, len(items))
	for i, it := range items {
		reqs[i] = types.WriteRequest{PutRequest: &types.PutRequest{Item: it}}
	}
	return s.batchWrite(ctx, table, reqs)
}

// deleteAll deletes items by key from one table.
func (s *Store) deleteAll(ctx context.Context, table string, keys []item) error {
	reqs := make([]types.WriteRequest, len(keys))
	for i, k := range keys {
		reqs[i] = types.WriteRequest{DeleteRequest: &types.DeleteRequest{Key: k}}
	}
	return s.batchWrite(ctx, table, reqs)
}

// batchWrite runs write requests on one table, 25 a call, retrying
// unprocessed ones.
func (s *Store) batchWrite(ctx context.Context, table string, reqs []types.WriteRequest) error {
	for start := 0; start < len(reqs); start += batchWriteMax {
		chunk := reqs[start:min(start+batchWriteMax, len(reqs))]
		req := map[string][]types.WriteRequest{table: chunk}
		for try := 0; len(req) > 0; try++ {
			if err := retryLeftovers(ctx, try); err != nil {
				return apierr.Errorf(spool.ErrThrottled, "write %d items to %s: %w", len(chunk), table, err)
			}
			res, err := s.clients.db.BatchWriteItem(ctx, &dynamodb.BatchWriteItemInput{RequestItems: req})
			if err != nil {
				return awsErr(err, "write %d items to %s", len(chunk), table)
			}
			req = res.UnprocessedItems
		}
	}
	return nil
}

// consistent is a KeysAndAttributes for strongly consistent batch reads of
// the given attributes.
func consistent(attrs ...string) types.KeysAndAttributes {
	e := newExpr()
	proj := ""
	for i, a := range attrs {
		if i > 0 {
			proj += ", "
		}
		proj += e.n(a)
	}
	return types.KeysAndAttributes{ConsistentRead: aws.Bool(true), ProjectionExpression: aws.String(proj), ExpressionAttributeNames: e.names}
}
