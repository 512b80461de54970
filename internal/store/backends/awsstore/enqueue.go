package awsstore

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"google.golang.org/protobuf/proto"

	"github.com/spool-run/spool"
	spoolv1 "github.com/spool-run/spool/gen/spool/v1"
	"github.com/spool-run/spool/internal/convert"
	"github.com/spool-run/spool/internal/store"
	"github.com/spool-run/spool/internal/store/storekit"
)

// Timing of enqueues that find a request marker without its job.
const (
	// rollForwardAfter is how old a marker must be before another caller
	// finishes its enqueue: younger, its maker is most likely still at it.
	rollForwardAfter = 3 * time.Second
	// markerPoll is how often such a caller looks for the job meanwhile.
	markerPoll = 50 * time.Millisecond
)

// Enqueue implements store.JobStore. See doc.go for why it sends the SQS
// message before writing the job, and how a request marker makes a
// request_id create one job, also under races and crashes.
func (s *Store) Enqueue(ctx context.Context, nj store.NewJob) (*spoolv1.Job, bool, error) {
	if err := nj.Check(); err != nil {
		return nil, false, err
	}
	url, err := s.jobURL(ctx, nj.Queue, nj.Priority)
	if err != nil {
		return nil, false, err
	}
	if err := s.checkAfter(ctx, nj.After); err != nil {
		return nil, false, err
	}
	// Before the job exists, so QueueStats never misses a queue with jobs.
	s.register(ctx, nj.Queue)
	job := storekit.NewJobRecord(nj, storekit.Now())
	if nj.RequestID != "" {
		mine, err := s.putMarker(ctx, job, nj.Secrets)
		if err != nil {
			return nil, false, err
		}
		if !mine {
			j, err := s.enqueued(ctx, nj.RequestID)
			return j, false, err
		}
		if err := runHook(ctx, s.hooks.afterMarker); err != nil {
			return nil, false, err
		}
	}
	j, err := s.create(ctx, url, job, nj.Secrets)
	return j, err == nil, err
}

// create sends the job's message (a queued job's: a scheduled one gets
// its message when promoted), then writes the job with its sealed secrets,
// then names it among the followers of the jobs it runs after. The job item is written only if it does not
// exist yet, so finishing someone else's enqueue (from the same marker)
// never resets a job that has moved on.
func (s *Store) create(ctx context.Context, queueURL string, job *spoolv1.Job, secrets []byte) (*spoolv1.Job, error) {
	// A job born final (rejected) has nothing to deliver: no message.
	if job.GetState() == spoolv1.JobState_JOB_STATE_QUEUED {
		if err := s.send(ctx, queueURL, message{JobID: job.GetJobId(), Queue: job.GetQueue(), Sent: time.Now().UnixMilli()}); err != nil {
			return nil, err
		}
	}
	it, err := newJobItem(job, secrets)
	if err != nil {
		return nil, err
	}
	if convert.State(job.GetState()).IsFinal() { // rejected: final from the start
		if ttl, ok := s.cfg.jobExpiry(job.GetUpdatedAt().AsTime()); ok {
			it[aJobTTL] = ttl
		}
	}
	written, err := s.putIfAbsent(ctx, it)
	if err != nil {
		return nil, awsErr(err, "write job %s", job.GetJobId())
	}
	if !written {
		return s.Get(ctx, job.GetJobId())
	}
	s.addFollower(ctx, job)
	r, err := decodeJob(it)
	if err != nil {
		return nil, err
	}
	return r.view(), nil
}

// markerKey is the key of a request id's marker. Hashing bounds its size
// (DynamoDB keys are limited) whatever the request id.
func markerKey(requestID string) item {
	sum := sha256.Sum256([]byte(requestID))
	return jobKey(requestKeyPrefix + hex.EncodeToString(sum[:]))
}

// putMarker claims the job's request id, keeping the job and its sealed
// secrets on the marker for whoever finishes the enqueue. mine is false
// when another enqueue claimed it first.
//
// With Config.JobTTL the marker expires JobTTL after the job's creation:
// no later than the job, which expires JobTTL after it ends, so a marker
// never outlives its job by its ttl. DynamoDB deletes expired items late
// and in no order, so a marker past its ttl counts as gone, and is
// replaced: its job has expired too (or, if it still runs JobTTL after
// its creation, the request id no longer names it).
func (s *Store) putMarker(ctx context.Context, job *spoolv1.Job, secrets []byte) (mine bool, err error) {
	b, err := marshal(job)
	if err != nil {
		return false, err
	}
	it := markerKey(job.GetRequestId())
	it[aKind] = str(kindRequest)
	it[aRequestID] = str(job.GetRequestId())
	it[aTarget] = str(job.GetJobId())
	it[aJob] = bin(b)
	it[aMadeAt] = num(storekit.Now().UnixMicro())
	addSecrets(it, secrets)
	if ttl, ok := s.cfg.jobExpiry(job.GetCreatedAt().AsTime()); ok {
		it[aJobTTL] = ttl
	}
	e := newExpr()
	_, err = s.clients.db.PutItem(ctx, &dynamodb.PutItemInput{
		TableName:                 aws.String(s.cfg.JobsTable),
		Item:                      it,
		ConditionExpression:       aws.String("attribute_not_exists(" + e.n(aJobID) + ") OR " + e.n(aJobTTL) + " < " + e.v(num(time.Now().Unix()))),
		ExpressionAttributeNames:  e.names,
		ExpressionAttributeValues: e.values,
	})
	if conditionFailed(err) {
		return false, nil
	}
	if err != nil {
		return false, awsErr(err, "record request id %q", job.GetRequestId())
	}
	return true, nil
}

// enqueued returns the job a request id's marker names. If the job is not
// there yet, its enqueue is in progress or died between the marker and the
// job: wait a little for the first, then finish it ourselves, from the
// marker, which holds the whole job.
func (s *Store) enqueued(ctx context.Context, requestID string) (*spoolv1.Job, error) {
	out, err := s.clients.db.GetItem(ctx, &dynamodb.GetItemInput{
		TableName: aws.String(s.cfg.JobsTable), Key: markerKey(requestID), ConsistentRead: aws.Bool(true),
	})
	if err != nil {
		return nil, awsErr(err, "read request id %q", requestID)
	}
	if out.Item == nil || getStr(out.Item, aKind) != kindRequest {
		return nil, fmt.Errorf("request id %q: its marker vanished", requestID)
	}
	job := &spoolv1.Job{}
	if err := proto.Unmarshal(getBin(out.Item, aJob), job); err != nil {
		return nil, fmt.Errorf("request id %q: stored job is corrupt: %w", requestID, err)
	}
	madeAt, err := getInt(out.Item, aMadeAt)
	if err != nil {
		return nil, fmt.Errorf("request id %q: %w", requestID, err)
	}
	for {
		r, err := s.getJob(ctx, job.GetJobId())
		if err == nil {
			return r.view(), nil
		}
		if !errors.Is(err, spool.ErrNotFound) {
			return nil, err
		}
		if time.Since(time.UnixMicro(madeAt)) >= s.rollForwardAfter {
			url, err := s.jobURL(ctx, job.GetQueue(), job.GetPriority())
			if err != nil {
				return nil, err
			}
			s.log.Warn("finishing an enqueue that stopped after recording its request id", "job", job.GetJobId(), "request_id", requestID)
			return s.create(ctx, url, job, getBin(out.Item, aSecrets))
		}
		t := time.NewTimer(markerPoll)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return nil, ctx.Err()
		}
	}
}

// putIfAbsent writes it to the jobs table unless an item with its key is
// there already (then written is false): the conditional write that makes
// both the request-id marker and the job item first-writer-wins.
func (s *Store) putIfAbsent(ctx context.Context, it item) (written bool, err error) {
	e := newExpr()
	_, err = s.clients.db.PutItem(ctx, &dynamodb.PutItemInput{
		TableName:                aws.String(s.cfg.JobsTable),
		Item:                     it,
		ConditionExpression:      aws.String("attribute_not_exists(" + e.n(aJobID) + ")"),
		ExpressionAttributeNames: e.names,
	})
	if conditionFailed(err) {
		return false, nil
	}
	return err == nil, err
}
