package awsstore

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"maps"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/google/uuid"

	"github.com/spool-run/spool"
	spoolv1 "github.com/spool-run/spool/gen/spool/v1"
	"github.com/spool-run/spool/internal/apierr"
	"github.com/spool-run/spool/internal/store"
)

// A queue's max_running (see doc.go, When jobs run). A limited queue's
// limit item lists the jobs that hold its slots (job id -> the attempt
// each holds one for). A lease of the queue first adds its job to the
// holders, by a write conditional on the item's version and refused when
// the slots are taken, then leases the job; a lease that fails gives its
// slot back. A holder whose job no longer runs that attempt is free: the
// paths that end a job need not know of limits, and the holders are
// pruned only when the slots look full. A holder counts as live while its
// job runs the attempt, or is at the attempt before, queued or scheduled
// (its lease is under way): a server that died between the two writes
// leaves a slot taken until the job is leased again, which then runs
// under it.

const (
	// limitFresh is how long a Store takes a queue it found without a
	// limit as such, reading nothing: a limit set on another server
	// holds here within it.
	limitFresh = time.Second
	// limitRetry hides a message that found its queue's slots taken.
	limitRetry = time.Second
	// holdRounds bounds how often a lease tries to take a slot while
	// others change the limit item.
	holdRounds = 10
)

// limitCache remembers the queues found without a limit, and serialises
// this Store's changes of limit items (they would only race each other).
type limitCache struct {
	mu   sync.Mutex
	none map[string]time.Time
	hold sync.Mutex
}

func (c *limitCache) unlimited(queue string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	at, ok := c.none[queue]
	return ok && time.Since(at) < limitFresh
}

func (c *limitCache) set(queue string, limited bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if limited {
		delete(c.none, queue)
		return
	}
	if c.none == nil {
		c.none = map[string]time.Time{}
	}
	c.none[queue] = time.Now()
}

func limitKey(queue string) item { return jobKey(limitKeyPrefix + queue) }

// limitRec is a queue's limit item as read (version 0: none).
type limitRec struct {
	max     int32
	holders map[string]int32
	version int64
}

func (s *Store) readLimit(ctx context.Context, queue string) (limitRec, error) {
	it, err := s.getItem(ctx, limitKey(queue))
	if err != nil || it == nil || getStr(it, aKind) != kindLimit {
		return limitRec{}, err
	}
	n := ints{it: it}
	lr := limitRec{max: int32(n.get(aMax)), version: n.get(aVersion)}
	if n.err != nil {
		return lr, fmt.Errorf("the limit of queue %q: %w", queue, n.err)
	}
	lr.holders, err = decodeHolders(getBin(it, aHolders))
	if err != nil {
		return lr, fmt.Errorf("the limit of queue %q: %w", queue, err)
	}
	return lr, nil
}

// writeLimit replaces the limit item read as lr, on condition that it did
// not change since; ok is false when it did.
func (s *Store) writeLimit(ctx context.Context, queue string, lr limitRec, limit int32, holders map[string]int32) (bool, error) {
	it := limitKey(queue)
	it[aKind], it[aQueue], it[aMax], it[aVersion] = str(kindLimit), str(queue), num(limit), num(lr.version+1)
	if len(holders) > 0 { // DynamoDB refuses an empty binary value
		it[aHolders] = bin(encodeHolders(holders))
	}
	e := newExpr()
	var cond string
	if lr.version > 0 {
		cond = e.eq(aVersion, num(lr.version))
	} else {
		cond = "attribute_not_exists(" + e.n(aJobID) + ")"
	}
	_, err := s.clients.db.PutItem(ctx, &dynamodb.PutItemInput{
		TableName:                 aws.String(s.cfg.JobsTable),
		Item:                      it,
		ConditionExpression:       aws.String(cond),
		ExpressionAttributeNames:  e.names,
		ExpressionAttributeValues: e.valuesOrNil(),
	})
	if conditionFailed(err) {
		return false, nil
	}
	if err != nil {
		return false, awsErr(err, "write the limit of queue %q", queue)
	}
	return true, nil
}

// SetQueueMaxRunning implements store.TimingStore. A queue that had no
// limit starts with its running jobs as holders (found as QueueStats finds
// them: its newest statsScan jobs), so the limit counts them.
func (s *Store) SetQueueMaxRunning(ctx context.Context, name string, limit int32) error {
	if limit < 0 || limit > store.MaxQueueRunning {
		return apierr.Errorf(spool.ErrInvalidArgument, "max_running must be 0 (no limit) to %d, got %d", store.MaxQueueRunning, limit)
	}
	if _, err := s.queues.url(ctx, name); err != nil {
		return err
	}
	if err := s.registerQueue(ctx, name); err != nil {
		return err
	}
	s.limits.hold.Lock()
	defer s.limits.hold.Unlock()
	for range holdRounds {
		lr, err := s.readLimit(ctx, name)
		if err != nil {
			return err
		}
		holders := lr.holders
		switch {
		case limit == 0:
			holders = nil
		case lr.max == 0:
			if holders, err = s.runningJobs(ctx, name); err != nil {
				return err
			}
		}
		ok, err := s.writeLimit(ctx, name, lr, limit, holders)
		if err != nil {
			return err
		}
		if ok {
			s.limits.set(name, limit > 0)
			return nil
		}
	}
	return apierr.Errorf(spool.ErrThrottled, "the limit of queue %q kept changing under this request; retry", name)
}

// runningJobs are the running jobs among a queue's newest statsScan, by
// id, with their attempts.
func (s *Store) runningJobs(ctx context.Context, queue string) (map[string]int32, error) {
	e := newExpr()
	in := &dynamodb.QueryInput{
		TableName:                 aws.String(s.cfg.JobsTable),
		IndexName:                 aws.String(indexByQueue),
		KeyConditionExpression:    aws.String(e.eq(aQueue, str(queue))),
		FilterExpression:          aws.String(e.eq(aState, num(int32(spoolv1.JobState_JOB_STATE_RUNNING)))),
		ProjectionExpression:      aws.String(e.n(aJobID)),
		ExpressionAttributeNames:  e.names,
		ExpressionAttributeValues: e.values,
		ScanIndexForward:          aws.Bool(false),
	}
	var ids []string
	for examined := 0; examined < s.statsScan; {
		in.Limit = aws.Int32(int32(s.statsScan - examined))
		page, err := s.clients.db.Query(ctx, in)
		if err != nil {
			return nil, awsErr(err, "find the running jobs of queue %q", queue)
		}
		examined += int(page.ScannedCount)
		for _, it := range page.Items {
			ids = append(ids, getStr(it, aJobID))
		}
		if page.LastEvaluatedKey == nil {
			break
		}
		in.ExclusiveStartKey = page.LastEvaluatedKey
	}
	jobs, err := s.getJobs(ctx, ids)
	if err != nil {
		return nil, err
	}
	out := map[string]int32{}
	for id, r := range jobs {
		if r.state == spoolv1.JobState_JOB_STATE_RUNNING {
			out[id] = r.attempt
		}
	}
	return out, nil
}

// room is how many jobs of a queue a Dequeue may lease now (-1: no
// limit). Full-looking slots are checked, and the dead holders pruned.
func (s *Store) room(ctx context.Context, queue string) (int, error) {
	if s.limits.unlimited(queue) {
		return -1, nil
	}
	lr, err := s.readLimit(ctx, queue)
	if err != nil {
		return 0, err
	}
	if lr.max == 0 {
		s.limits.set(queue, false)
		return -1, nil
	}
	s.limits.set(queue, true)
	if len(lr.holders) < int(lr.max) {
		return int(lr.max) - len(lr.holders), nil
	}
	live, err := s.live(ctx, lr.holders)
	if err != nil {
		return 0, err
	}
	if len(live) < len(lr.holders) {
		s.limits.hold.Lock()
		// Lost to another change, the pruning is done again next time.
		_, err = s.writeLimit(ctx, queue, lr, lr.max, live)
		s.limits.hold.Unlock()
		if err != nil {
			return 0, err
		}
	}
	return max(0, int(lr.max)-len(live)), nil
}

// live returns the holders that still hold their slots.
func (s *Store) live(ctx context.Context, holders map[string]int32) (map[string]int32, error) {
	keys := make([]item, 0, len(holders))
	for id := range holders {
		keys = append(keys, jobKey(id))
	}
	items, err := s.batchGet(ctx, s.cfg.JobsTable, keys, consistent(aJobID, aKind, aState, aAttempt))
	if err != nil {
		return nil, err
	}
	out := map[string]int32{}
	for _, it := range items {
		n := ints{it: it}
		st, attempt := spoolv1.JobState(n.get(aState)), int32(n.get(aAttempt))
		if n.err != nil {
			return nil, n.err
		}
		id := getStr(it, aJobID)
		held := holders[id]
		waiting := st == spoolv1.JobState_JOB_STATE_QUEUED || st == spoolv1.JobState_JOB_STATE_SCHEDULED
		if isJobItem(it) && ((st == spoolv1.JobState_JOB_STATE_RUNNING && attempt == held) || (waiting && attempt == held-1)) {
			out[id] = held
		}
	}
	return out, nil
}

// hold takes a slot of r's queue for its next attempt; false when they
// are all taken (or kept changing).
func (s *Store) hold(ctx context.Context, r *jobRec) (bool, error) {
	s.limits.hold.Lock()
	defer s.limits.hold.Unlock()
	attempt := r.attempt + 1
	for range holdRounds {
		lr, err := s.readLimit(ctx, r.queue())
		if err != nil || lr.max == 0 {
			return err == nil, err
		}
		if a, ok := lr.holders[r.id()]; ok && a == attempt {
			return true, nil
		}
		h := maps.Clone(lr.holders)
		if h == nil {
			h = map[string]int32{}
		}
		if len(h) >= int(lr.max) {
			if h, err = s.live(ctx, h); err != nil {
				return false, err
			}
			if len(h) >= int(lr.max) {
				return false, nil
			}
		}
		h[r.id()] = attempt
		ok, err := s.writeLimit(ctx, r.queue(), lr, lr.max, h)
		if err != nil || ok {
			return ok, err
		}
	}
	return false, nil
}

// unhold gives back the slot a lease that failed took. Failing, the
// slot stays taken until the job is leased again (see live).
func (s *Store) unhold(ctx context.Context, queue, id string, attempt int32) {
	s.limits.hold.Lock()
	defer s.limits.hold.Unlock()
	for range holdRounds {
		lr, err := s.readLimit(ctx, queue)
		if err != nil {
			s.log.Warn("cannot give back a slot of a queue's max_running", "queue", queue, "job", id, "error", err)
			return
		}
		if a, ok := lr.holders[id]; !ok || a != attempt {
			return
		}
		h := maps.Clone(lr.holders)
		delete(h, id)
		if ok, err := s.writeLimit(ctx, queue, lr, lr.max, h); err != nil || ok {
			return
		}
	}
}

// limitsOf reads the max_running of the named queues (absent: none).
func (s *Store) limitsOf(ctx context.Context, names []string) (map[string]int32, error) {
	keys := make([]item, len(names))
	for i, n := range names {
		keys[i] = limitKey(n)
	}
	items, err := s.batchGet(ctx, s.cfg.JobsTable, keys, consistent(aKind, aQueue, aMax))
	if err != nil {
		return nil, err
	}
	out := map[string]int32{}
	for _, it := range items {
		n, err := getInt(it, aMax)
		if err != nil {
			return nil, err
		}
		if getStr(it, aKind) == kindLimit && n > 0 {
			out[getStr(it, aQueue)] = int32(n)
		}
	}
	return out, nil
}

// Holders are stored compactly, so a limit of MaxQueueRunning fits an
// item: per holder, a tag (0: the id is a UUID, its 16 bytes follow; 1:
// the id's length and bytes follow), then the attempt, as varints.
func encodeHolders(h map[string]int32) []byte {
	var b []byte
	for id, attempt := range h {
		if u, err := uuid.Parse(id); err == nil && u.String() == id {
			b = append(b, 0)
			b = append(b, u[:]...)
		} else {
			b = append(b, 1)
			b = binary.AppendUvarint(b, uint64(len(id)))
			b = append(b, id...)
		}
		b = binary.AppendUvarint(b, uint64(attempt))
	}
	return b
}

var errHolders = errors.New("the stored holders of its slots are corrupt")

func decodeHolders(b []byte) (map[string]int32, error) {
	out := map[string]int32{}
	for len(b) > 0 {
		tag := b[0]
		b = b[1:]
		var id string
		switch tag {
		case 0:
			if len(b) < 16 {
				return nil, errHolders
			}
			id = uuid.UUID(b[:16]).String()
			b = b[16:]
		case 1:
			n, k := binary.Uvarint(b)
			if k <= 0 || uint64(len(b)-k) < n {
				return nil, errHolders
			}
			id = string(b[k : k+int(n)])
			b = b[k+int(n):]
		default:
			return nil, errHolders
		}
		a, k := binary.Uvarint(b)
		if k <= 0 {
			return nil, errHolders
		}
		b = b[k:]
		out[id] = int32(a)
	}
	return out, nil
}
