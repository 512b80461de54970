package awsstore

import (
	"context"
	"errors"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/spool-run/spool"
	"github.com/spool-run/spool/internal/apierr"
)

// queueDir finds the SQS queue of a spool queue: from the configured URLs,
// else by name (prefix + queue), creating it when AutoCreateQueues is on.
// Found URLs are remembered; lookups of one name run once at a time.
type queueDir struct {
	s       *Store
	mu      sync.Mutex
	urls    map[string]string        // spool queue -> SQS URL
	pending map[string]chan struct{} // lookups in progress
	// regd holds the queues this Store has put in the queue registry.
	regd map[string]bool
}

func newQueueDir(s *Store) *queueDir {
	return &queueDir{s: s, urls: map[string]string{}, pending: map[string]chan struct{}{}, regd: map[string]bool{}}
}

// registered reports whether this Store has put queue in the registry.
func (d *queueDir) registered(queue string) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.regd[queue]
}

// setRegistered records that queue is in the registry.
func (d *queueDir) setRegistered(queue string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.regd[queue] = true
}

// url returns the SQS queue URL of a spool queue. An unknown queue is
// spool.ErrInvalidArgument.
func (d *queueDir) url(ctx context.Context, queue string) (string, error) {
	for {
		d.mu.Lock()
		if u, ok := d.urls[queue]; ok {
			d.mu.Unlock()
			return u, nil
		}
		wait, busy := d.pending[queue]
		if !busy {
			done := make(chan struct{})
			d.pending[queue] = done
			d.mu.Unlock()
			u, err := d.lookup(ctx, queue)
			d.mu.Lock()
			if err == nil {
				d.urls[queue] = u
			}
			delete(d.pending, queue)
			close(done)
			d.mu.Unlock()
			return u, err
		}
		d.mu.Unlock()
		select {
		case <-wait:
		case <-ctx.Done():
			return "", ctx.Err()
		}
	}
}

// known returns the spool queues whose SQS queues this store has found.
func (d *queueDir) known() map[string]string {
	d.mu.Lock()
	defer d.mu.Unlock()
	out := make(map[string]string, len(d.urls))
	for k, v := range d.urls {
		out[k] = v
	}
	return out
}

// lookup finds (or creates) a queue and checks its settings.
func (d *queueDir) lookup(ctx context.Context, queue string) (string, error) {
	url, err := d.find(ctx, queue)
	if err != nil {
		return "", err
	}
	d.check(ctx, queue, url)
	return url, nil
}

func (d *queueDir) find(ctx context.Context, queue string) (string, error) {
	cfg := d.s.cfg
	if url, ok := cfg.Queues[queue]; ok {
		return url, nil
	}
	name, err := cfg.sqsName(queue)
	if err != nil {
		return "", apierr.Errorf(spool.ErrInvalidArgument, "%v", err)
	}
	out, err := d.s.clients.sqs.GetQueueUrl(ctx, &sqs.GetQueueUrlInput{QueueName: aws.String(name)})
	if err == nil {
		return aws.ToString(out.QueueUrl), nil
	}
	if !queueMissing(err) {
		return "", awsErr(err, "look up SQS queue %s of queue %q", name, queue)
	}
	if !cfg.AutoCreateQueues {
		return "", apierr.Errorf(spool.ErrInvalidArgument,
			"queue %q is not configured: add it under store.aws.queues, or create SQS queue %s (list it in store.aws.queue_names and run `spool aws init`)",
			queue, name)
	}
	r, err := d.s.createQueue(ctx, name, name+DeadLetterSuffix)
	if err != nil {
		return "", err
	}
	d.s.log.Info("created SQS queue", "queue", queue, "url", r.URL)
	return r.URL, nil
}

// check warns about a queue whose default wait is not 0: the SDK cannot
// ask for a short poll (it leaves WaitTimeSeconds out when it is 0), so on
// such a queue a Dequeue that should not wait waits that long.
func (d *queueDir) check(ctx context.Context, queue, url string) {
	out, err := d.s.clients.sqs.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{
		QueueUrl: aws.String(url), AttributeNames: []sqstypes.QueueAttributeName{sqstypes.QueueAttributeNameReceiveMessageWaitTimeSeconds},
	})
	if err != nil {
		d.s.log.Warn("cannot read the settings of an SQS queue", "queue", queue, "url", url, "error", err)
		return
	}
	if w := out.Attributes[string(sqstypes.QueueAttributeNameReceiveMessageWaitTimeSeconds)]; w != "" && w != "0" {
		d.s.log.Warn("SQS queue has ReceiveMessageWaitTimeSeconds > 0, so Dequeue calls that should return at once wait that long: set it to 0",
			"queue", queue, "url", url, "seconds", w)
	}
}

// queueMissing reports whether err says an SQS queue does not exist.
func queueMissing(err error) bool {
	var e *sqstypes.QueueDoesNotExist
	if errors.As(err, &e) {
		return true
	}
	switch errorCode(err) {
	case "QueueDoesNotExist", "AWS.SimpleQueueService.NonExistentQueue":
		return true
	}
	return false
}
