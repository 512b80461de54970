package awsstore

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"maps"
	"strconv"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
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
	// limit as such, reading nothing: a limit set on another server, or
	// a priority first used there, holds here within it.
	limitFresh = time.Second
	// limitRetry hides a message that found its queue's slots taken.
	limitRetry = time.Second
	// holdRounds bounds how often a lease tries to take a slot while
	// others change the limit item.
	holdRounds = 10
)

// limitCache remembers each queue's settings item as last read (its
// limit and the priorities in use), and serialises this Store's changes
// of each queue's limit (they would only race each other).
type limitCache struct {
	mu    sync.Mutex
	read  map[string]cachedLimit
	holds map[string]*sync.Mutex
}

// hold is the lock of this Store's changes of queue's limit.
func (c *limitCache) hold(queue string) *sync.Mutex {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.holds == nil {
		c.holds = map[string]*sync.Mutex{}
	}
	m, ok := c.holds[queue]
	if !ok {
		m = &sync.Mutex{}
		c.holds[queue] = m
	}
	return m
}

type cachedLimit struct {
	at time.Time
	lr limitRec
}

// fresh returns a queue's settings read within limitFresh.
func (c *limitCache) fresh(queue string) (limitRec, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	cl, ok := c.read[queue]
	return cl.lr, ok && time.Since(cl.at) < limitFresh
}

func (c *limitCache) put(queue string, lr limitRec) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.read == nil {
		c.read = map[string]cachedLimit{}
	}
	c.read[queue] = cachedLimit{at: time.Now(), lr: lr}
}

// forget makes the next look at a queue's settings read them.
func (c *limitCache) forget(queue string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.read, queue)
}

func limitKey(queue string) item { return jobKey(limitKeyPrefix + queue) }

// limitRec is a queue's settings item as read (version 0: no limit was
// ever set): its max_running, the holders of its slots, and the
// priorities other than the default its jobs have used (see priority.go).
type limitRec struct {
	max     int32
	holders map[string]int32
	version int64
	prios   []int32
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
	if ns, ok := it[aPriorities].(*types.AttributeValueMemberNS); ok {
		for _, v := range ns.Value {
			p, err := strconv.ParseInt(v, 10, 32)
			if err != nil {
				return lr, fmt.Errorf("the priorities of queue %q: %w", queue, err)
			}
			lr.prios = append(lr.prios, int32(p))
		}
	}
	return lr, nil
}

// writeLimit sets the limit and holders of the settings item read as lr,
// on condition that they did not change since; ok is false when they did.
// (The priorities in use are added apart, and left as they are.)
func (s *Store) writeLimit(ctx context.Context, queue string, lr limitRec, limit int32, holders map[string]int32) (bool, error) {
	e := newExpr()
	u := newUpdate(e).Set(aKind, str(kindLimit)).Set(aQueue, str(queue)).Set(aMax, num(limit)).Set(aVersion, num(lr.version+1))
	if len(holders) > 0 {
		u.Set(aHolders, bin(encodeHolders(holders)))
	} else {
		u.Remove(aHolders) // DynamoDB refuses an empty binary value
	}
	cond := "attribute_not_exists(" + e.n(aVersion) + ")"
	if lr.version > 0 {
		cond = e.eq(aVersion, num(lr.version))
	}
	ok, err := s.updateItem(ctx, limitKey(queue), u, cond)
	if err != nil {
		return false, awsErr(err, "write the limit of queue %q", queue)
	}
	return ok, nil
}

// usePriority records that queue has jobs of priority p (not the
// default), so every server's Dequeue polls its SQS queue.
func (s *Store) usePriority(ctx context.Context, queue string, p int32) error {
	key := queue + prioritySuffix(p)
	if !s.prio.record(key, false) {
		return nil
	}
	e := newExpr()
	u := newUpdate(e).Set(aKind, str(kindLimit)).Set(aQueue, str(queue)).
		Add(aPriorities, &types.AttributeValueMemberNS{Value: []string{strconv.Itoa(int(p))}})
	if _, err := s.updateItem(ctx, limitKey(queue), u, ""); err != nil {
		return awsErr(err, "record priority %d of queue %q", p, queue)
	}
	s.prio.record(key, true)
	s.limits.forget(queue)
	return nil
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
	mu := s.limits.hold(name)
	mu.Lock()
	defer mu.Unlock()
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
			s.limits.forget(name)
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

// settings returns a queue's settings item, as read within limitFresh
// unless the queue is limited (a limit is always read afresh).
func (s *Store) settings(ctx context.Context, queue string) (limitRec, error) {
	if lr, ok := s.limits.fresh(queue); ok && lr.max == 0 {
		return lr, nil
	}
	lr, err := s.readLimit(ctx, queue)
	if err != nil {
		return lr, err
	}
	s.limits.put(queue, lr)
	return lr, nil
}

// room is how many jobs of a queue with settings lr a Dequeue may lease
// now (-1: no limit). Full-looking slots are checked, and the dead
// holders pruned.
func (s *Store) room(ctx context.Context, queue string, lr limitRec) (int, error) {
	if lr.max == 0 {
		return -1, nil
	}
	if len(lr.holders) < int(lr.max) {
		return int(lr.max) - len(lr.holders), nil
	}
	live, err := s.live(ctx, lr.holders)
	if err != nil {
		return 0, err
	}
	if len(live) < len(lr.holders) {
		mu := s.limits.hold(queue)
		mu.Lock()
		// Lost to another change, the pruning is done again next time.
		_, err = s.writeLimit(ctx, queue, lr, lr.max, live)
		mu.Unlock()
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
	mu := s.limits.hold(r.queue())
	mu.Lock()
	defer mu.Unlock()
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
	mu := s.limits.hold(queue)
	mu.Lock()
	defer mu.Unlock()
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
