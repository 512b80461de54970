package awsstore

import (
	"context"
	"encoding/json"
	"errors"
	"strconv"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
)

// Queue settings. Messages carry only a job id, so they are tiny; what
// matters is that they outlive any wait in a queue (14 days, SQS's most).
const (
	messageRetention = 14 * 24 * 60 * 60
	// defaultVisibility applies only to receives that do not set one;
	// spool's always do.
	defaultVisibility = 30
	// queueWaitSeconds is the queue's default long poll. It must be 0: the
	// SDK leaves WaitTimeSeconds out of a request when it is 0, so the
	// queue's default is the only way to ask for a short poll.
	queueWaitSeconds = 0
	// longPollSeconds is SQS's longest wait for one receive.
	longPollSeconds = 20
)

// madeQueue is a queue Provision or auto-creation ensured, with its
// dead-letter queue.
type madeQueue struct {
	URL       string
	Main, DLQ Resource
}

// redrivePolicy is SQS's RedrivePolicy attribute.
type redrivePolicy struct {
	DeadLetterTargetArn string `json:"deadLetterTargetArn"`
	MaxReceiveCount     string `json:"maxReceiveCount"`
}

// createQueue ensures the SQS queue name and its dead-letter queue dlqName
// exist with spool's settings. A priority's queue names the default
// queue's dead-letter queue (see priority.go).
func (s *Store) createQueue(ctx context.Context, name, dlqName string) (madeQueue, error) {
	common := map[string]string{
		string(sqstypes.QueueAttributeNameMessageRetentionPeriod): strconv.Itoa(messageRetention),
		string(sqstypes.QueueAttributeNameSqsManagedSseEnabled):   "true",
	}
	dlq, err := s.ensureQueue(ctx, dlqName, "SQS dead-letter queue", common)
	if err != nil {
		return madeQueue{}, err
	}
	attrs, err := s.clients.sqs.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{
		QueueUrl:       aws.String(dlq.ID),
		AttributeNames: []sqstypes.QueueAttributeName{sqstypes.QueueAttributeNameQueueArn},
	})
	if err != nil {
		return madeQueue{}, awsErr(err, "read the ARN of SQS queue %s", dlqName)
	}
	policy, _ := json.Marshal(redrivePolicy{
		DeadLetterTargetArn: attrs.Attributes[string(sqstypes.QueueAttributeNameQueueArn)],
		MaxReceiveCount:     strconv.Itoa(s.cfg.MaxReceiveCount),
	})
	mainAttrs := map[string]string{
		string(sqstypes.QueueAttributeNameVisibilityTimeout):             strconv.Itoa(defaultVisibility),
		string(sqstypes.QueueAttributeNameReceiveMessageWaitTimeSeconds): strconv.Itoa(queueWaitSeconds),
		string(sqstypes.QueueAttributeNameRedrivePolicy):                 string(policy),
	}
	for k, v := range common {
		mainAttrs[k] = v
	}
	main, err := s.ensureQueue(ctx, name, "SQS queue", mainAttrs)
	if err != nil {
		return madeQueue{}, err
	}
	return madeQueue{URL: main.ID, Main: main, DLQ: dlq}, nil
}

// ensureQueue creates a queue with attrs, or sets attrs on the existing
// one (so a changed max_receive_count reaches queues made before).
func (s *Store) ensureQueue(ctx context.Context, name, kind string, attrs map[string]string) (Resource, error) {
	res := Resource{Kind: kind, Name: name}
	found, err := s.clients.sqs.GetQueueUrl(ctx, &sqs.GetQueueUrlInput{QueueName: aws.String(name)})
	if err != nil && !queueMissing(err) {
		return res, awsErr(err, "look up SQS queue %s", name)
	}
	if err != nil {
		made, err := s.clients.sqs.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String(name), Attributes: attrs})
		if err == nil {
			res.ID, res.Action = aws.ToString(made.QueueUrl), "created"
			return res, nil
		}
		// Made meanwhile by someone else, with other attributes: fall
		// through to setting ours.
		var exists *sqstypes.QueueNameExists
		if !errors.As(err, &exists) {
			return res, awsErr(err, "create SQS queue %s", name)
		}
		if found, err = s.clients.sqs.GetQueueUrl(ctx, &sqs.GetQueueUrlInput{QueueName: aws.String(name)}); err != nil {
			return res, awsErr(err, "look up SQS queue %s", name)
		}
	}
	res.ID, res.Action = aws.ToString(found.QueueUrl), "exists, attributes updated"
	if _, err := s.clients.sqs.SetQueueAttributes(ctx, &sqs.SetQueueAttributesInput{QueueUrl: found.QueueUrl, Attributes: attrs}); err != nil {
		return res, awsErr(err, "set attributes of SQS queue %s", name)
	}
	return res, nil
}
