package awsstore

import (
	"context"
	"errors"
	"strconv"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/aws/smithy-go"
)

// The SQS requests a store gathers (see gatherer): message sends, deletes
// and visibility changes, each of which has a batch form that answers for
// every entry separately.

// sqsCall is one kind of SQS request in its two forms.
type sqsCall[T any] struct {
	// one makes the request for a single item.
	one func(ctx context.Context, url string, it T) error
	// many makes the batch request for items, entry i having the Id
	// strconv.Itoa(i), and returns the Ids SQS reports done and the
	// entries it reports failed.
	many func(ctx context.Context, url string, items []T) (done []*string, failed []sqstypes.BatchResultErrorEntry, err error)
}

// errUnanswered: a batch request's answer did not mention an entry.
var errUnanswered = errors.New("SQS's answer to a batch request left this entry out")

// run sends batch: a lone item by the single request (what it costs is
// the same, and its errors are the request's own), more by the batch one.
// A failed batch request fails every entry. An entry that failed on SQS's
// side is tried again alone, as the SDK retries a request that did; one
// that SQS refused fails alone, with SQS's code.
func (c sqsCall[T]) run(ctx context.Context, url string, batch []*gathered[T]) {
	if len(batch) == 1 {
		batch[0].err = c.one(ctx, url, batch[0].item)
		return
	}
	items := make([]T, len(batch))
	for i, p := range batch {
		items[i] = p.item
		p.err = errUnanswered
	}
	done, failed, err := c.many(ctx, url, items)
	if err != nil {
		for _, p := range batch {
			p.err = err
		}
		return
	}
	entry := func(id *string) *gathered[T] {
		i, err := strconv.Atoi(aws.ToString(id))
		if err != nil || i < 0 || i >= len(batch) {
			return nil
		}
		return batch[i]
	}
	for _, id := range done {
		if p := entry(id); p != nil {
			p.err = nil
		}
	}
	var again sync.WaitGroup
	for _, f := range failed {
		p := entry(f.Id)
		switch {
		case p == nil:
		case f.SenderFault:
			p.err = &smithy.GenericAPIError{Code: aws.ToString(f.Code), Message: aws.ToString(f.Message), Fault: smithy.FaultClient}
		default:
			again.Go(func() { p.err = c.one(ctx, url, p.item) })
		}
	}
	again.Wait()
}

// entryID is the Id of a batch request's entry i.
func entryID(i int) *string { return aws.String(strconv.Itoa(i)) }

// ids are the Ids of a batch answer's entries.
func ids[E any](entries []E, id func(E) *string) []*string {
	out := make([]*string, len(entries))
	for i, e := range entries {
		out[i] = id(e)
	}
	return out
}

// visChange is a message's new visibility timeout, in seconds.
type visChange struct {
	handle  string
	seconds int32
}

// sqsGatherers are a store's gatherers of SQS requests, keyed by queue
// URL.
type sqsGatherers struct {
	sends   *gatherer[string] // message bodies
	deletes *gatherer[string] // receipt handles
	hides   *gatherer[visChange]
}

func newSQSGatherers(c *sqs.Client) sqsGatherers {
	sends := sqsCall[string]{
		one: func(ctx context.Context, url, body string) error {
			_, err := c.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(url), MessageBody: aws.String(body)})
			return err
		},
		many: func(ctx context.Context, url string, bodies []string) ([]*string, []sqstypes.BatchResultErrorEntry, error) {
			entries := make([]sqstypes.SendMessageBatchRequestEntry, len(bodies))
			for i, b := range bodies {
				entries[i] = sqstypes.SendMessageBatchRequestEntry{Id: entryID(i), MessageBody: aws.String(b)}
			}
			out, err := c.SendMessageBatch(ctx, &sqs.SendMessageBatchInput{QueueUrl: aws.String(url), Entries: entries})
			if err != nil {
				return nil, nil, err
			}
			return ids(out.Successful, func(e sqstypes.SendMessageBatchResultEntry) *string { return e.Id }), out.Failed, nil
		},
	}
	deletes := sqsCall[string]{
		one: func(ctx context.Context, url, handle string) error {
			_, err := c.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: aws.String(url), ReceiptHandle: aws.String(handle)})
			return err
		},
		many: func(ctx context.Context, url string, handles []string) ([]*string, []sqstypes.BatchResultErrorEntry, error) {
			entries := make([]sqstypes.DeleteMessageBatchRequestEntry, len(handles))
			for i, h := range handles {
				entries[i] = sqstypes.DeleteMessageBatchRequestEntry{Id: entryID(i), ReceiptHandle: aws.String(h)}
			}
			out, err := c.DeleteMessageBatch(ctx, &sqs.DeleteMessageBatchInput{QueueUrl: aws.String(url), Entries: entries})
			if err != nil {
				return nil, nil, err
			}
			return ids(out.Successful, func(e sqstypes.DeleteMessageBatchResultEntry) *string { return e.Id }), out.Failed, nil
		},
	}
	hides := sqsCall[visChange]{
		one: func(ctx context.Context, url string, v visChange) error {
			_, err := c.ChangeMessageVisibility(ctx, &sqs.ChangeMessageVisibilityInput{
				QueueUrl: aws.String(url), ReceiptHandle: aws.String(v.handle), VisibilityTimeout: v.seconds,
			})
			return err
		},
		many: func(ctx context.Context, url string, vs []visChange) ([]*string, []sqstypes.BatchResultErrorEntry, error) {
			entries := make([]sqstypes.ChangeMessageVisibilityBatchRequestEntry, len(vs))
			for i, v := range vs {
				entries[i] = sqstypes.ChangeMessageVisibilityBatchRequestEntry{Id: entryID(i), ReceiptHandle: aws.String(v.handle), VisibilityTimeout: v.seconds}
			}
			out, err := c.ChangeMessageVisibilityBatch(ctx, &sqs.ChangeMessageVisibilityBatchInput{QueueUrl: aws.String(url), Entries: entries})
			if err != nil {
				return nil, nil, err
			}
			return ids(out.Successful, func(e sqstypes.ChangeMessageVisibilityBatchResultEntry) *string { return e.Id }), out.Failed, nil
		},
	}
	return sqsGatherers{
		sends:   newGatherer(sqsBatchMax, sends.run),
		deletes: newGatherer(sqsBatchMax, deletes.run),
		hides:   newGatherer(sqsBatchMax, hides.run),
	}
}
