package awsstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/spool-run/spool"
	spoolv1 "github.com/spool-run/spool/gen/spool/v1"
	"github.com/spool-run/spool/internal/convert"
	"github.com/spool-run/spool/internal/store/storekit"
)

// A message lands in its queue's dead-letter queue when SQS has handed it
// out MaxReceiveCount times. Its job can then never be delivered again, so
// it must not stay queued or running: ExpireLeases fails it (or cancels
// it, if that was asked) and deletes the message.

// deadLetterRounds bounds the receives per dead-letter queue per check.
const deadLetterRounds = 10

// deadLetterClock remembers when the dead-letter queues were last checked
// and where they are.
type deadLetterClock struct {
	mu   sync.Mutex
	last time.Time
	urls map[string]string // queue URL -> its dead-letter queue URL ("" if none)
}

// due reports whether a check is due, and if so starts one.
func (c *deadLetterClock) due(every time.Duration) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if every > 0 && !c.last.IsZero() && time.Since(c.last) < every {
		return false
	}
	c.last = time.Now()
	return true
}

// drainDeadLetters settles the jobs of the messages in the dead-letter
// queues of the queues this store has used. It returns how many jobs
// changed.
func (s *Store) drainDeadLetters(ctx context.Context) (int, error) {
	if !s.dlq.due(s.cfg.DeadLetterCheckInterval) {
		return 0, nil
	}
	n := 0
	for _, url := range s.queues.known() {
		dlq, err := s.deadLetterURL(ctx, url)
		if err != nil {
			return n, err
		}
		if dlq == "" {
			continue
		}
		for range deadLetterRounds {
			out, err := s.clients.sqs.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{
				QueueUrl: aws.String(dlq), MaxNumberOfMessages: 10, VisibilityTimeout: defaultVisibility,
			})
			if err != nil {
				return n, awsErr(err, "receive from dead-letter queue %s", dlq)
			}
			if len(out.Messages) == 0 {
				break
			}
			for _, m := range out.Messages {
				changed, err := s.deadLetter(ctx, dlq, m)
				if err != nil {
					return n, err
				}
				if changed {
					n++
				}
			}
		}
	}
	return n, nil
}

// deadLetter settles the job of one dead-lettered message.
func (s *Store) deadLetter(ctx context.Context, dlq string, m sqstypes.Message) (changed bool, err error) {
	handle := aws.ToString(m.ReceiptHandle)
	msg, err := decodeMessage(aws.ToString(m.Body))
	if err != nil {
		s.drop(ctx, dlq, handle)
		return false, nil
	}
	r, err := s.getJob(ctx, msg.JobID)
	if err != nil {
		if errors.Is(err, spool.ErrNotFound) {
			s.drop(ctx, dlq, handle)
			return false, nil
		}
		return false, err
	}
	if r.state == spoolv1.JobState_JOB_STATE_SCHEDULED {
		// A stray message (a promotion's that lost its race): the job
		// gets its own message when it is promoted.
		s.drop(ctx, dlq, handle)
		return false, nil
	}
	now := storekit.Now()
	// A worker may hold the job (a duplicate message was dead-lettered, or a
	// late heartbeat revived the lease): then look again once the lease is
	// over.
	if s.setAside(ctx, dlq, handle, r, now) {
		return false, nil
	}
	o := storekit.Expired(r.view(), now)
	if !convert.State(o.State).IsFinal() {
		o = storekit.Outcome{State: spoolv1.JobState_JOB_STATE_FAILED, Result: &spoolv1.JobResult{ExitCode: -1, Attempt: r.attempt, FinishedAt: timestamppb.New(now),
			Error: fmt.Sprintf("SQS moved the job's message to the dead-letter queue after %d receives (attempt %d of %d); it cannot be delivered again",
				s.cfg.MaxReceiveCount, r.attempt, r.spec.GetMaxAttempts())}}
	}
	st := o.State
	var ok bool
	if r.state == spoolv1.JobState_JOB_STATE_RUNNING {
		_, ok, err = s.endLease(ctx, r, o, now)
	} else {
		ok, err = s.failQueued(ctx, r, o.State, o.Result, now)
	}
	if err != nil {
		return false, err
	}
	if ok {
		s.log.Warn("failed a job whose SQS message was dead-lettered", "job", r.id(), "state", convert.State(st).String())
		s.drop(ctx, dlq, handle)
	}
	return ok, nil
}

// failQueued makes a queued job final.
func (s *Store) failQueued(ctx context.Context, r *jobRec, st spoolv1.JobState, res *spoolv1.JobResult, now time.Time) (bool, error) {
	e := newExpr()
	u, err := s.settle(e, r, storekit.Outcome{State: st, Result: res}, false, now)
	if err != nil {
		return false, err
	}
	_, ok, err := s.updateJob(ctx, r.id(), u, and(isJob(e), e.eq(aState, num(int32(r.state))), e.eq(aAttempt, num(r.attempt)), e.eq(aRev, num(r.rev))))
	return ok, err
}

// deadLetterURL finds a queue's dead-letter queue from its RedrivePolicy.
func (s *Store) deadLetterURL(ctx context.Context, queueURL string) (string, error) {
	s.dlq.mu.Lock()
	u, ok := s.dlq.urls[queueURL]
	s.dlq.mu.Unlock()
	if ok {
		return u, nil
	}
	out, err := s.clients.sqs.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{
		QueueUrl: aws.String(queueURL), AttributeNames: []sqstypes.QueueAttributeName{sqstypes.QueueAttributeNameRedrivePolicy},
	})
	if err != nil {
		return "", awsErr(err, "read the redrive policy of SQS queue %s", queueURL)
	}
	if raw := out.Attributes[string(sqstypes.QueueAttributeNameRedrivePolicy)]; raw != "" {
		var p redrivePolicy
		if err := json.Unmarshal([]byte(raw), &p); err != nil {
			return "", fmt.Errorf("SQS queue %s has a redrive policy spool cannot read: %w", queueURL, err)
		}
		// arn:aws:sqs:REGION:ACCOUNT:NAME
		parts := strings.Split(p.DeadLetterTargetArn, ":")
		if len(parts) != 6 {
			return "", fmt.Errorf("SQS queue %s: dead-letter target %q is not a queue ARN", queueURL, p.DeadLetterTargetArn)
		}
		got, err := s.clients.sqs.GetQueueUrl(ctx, &sqs.GetQueueUrlInput{QueueName: aws.String(parts[5]), QueueOwnerAWSAccountId: aws.String(parts[4])})
		if err != nil {
			return "", awsErr(err, "look up dead-letter queue %s", parts[5])
		}
		u = aws.ToString(got.QueueUrl)
	}
	s.dlq.mu.Lock()
	if s.dlq.urls == nil {
		s.dlq.urls = map[string]string{}
	}
	s.dlq.urls[queueURL] = u
	s.dlq.mu.Unlock()
	return u, nil
}
