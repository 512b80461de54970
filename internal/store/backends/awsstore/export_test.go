package awsstore

import (
	"context"
	"net/http/httptrace"
	"strconv"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsmiddleware "github.com/aws/aws-sdk-go-v2/aws/middleware"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	dbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/aws/smithy-go/middleware"
)

// Test access to the store's insides.

// BeforeWrite makes Append run fn once it has read the job and planned its
// items, before it writes them (to stall there, as a paused server would);
// an error from fn abandons the append, as a crash would. AfterWrite does
// the same once the items are written, before the commit.
func BeforeWrite(s *Store, fn func(ctx context.Context) error) { s.hooks.beforeWrite = fn }
func AfterWrite(s *Store, fn func(ctx context.Context) error)  { s.hooks.afterWrite = fn }

// BeforeLease makes Dequeue run fn once it has read a queued job it is
// about to lease (and each time it tries again).
func BeforeLease(s *Store, fn func(ctx context.Context) error) { s.hooks.beforeLease = fn }

// IngestAfterReserve and IngestAfterWrite stop an Ingest call the same
// way: fn runs once the call has reserved its range, or once it has
// written its items and markers, before the commit.
func IngestAfterReserve(s *Store, fn func(ctx context.Context) error) {
	s.hooks.afterIngestReserve = fn
}

func IngestAfterWrite(s *Store, fn func(ctx context.Context) error) {
	s.hooks.afterIngestWrite = fn
}

// SetIngestTiming shortens how long an ingest call's reservation lives
// without renewal before another call takes it over, and how long a call
// waits for others before giving up.
func SetIngestTiming(s *Store, abandonAfter, patience time.Duration) {
	s.abandonAfter, s.patience = abandonAfter, patience
}

// MarkerKey is the key of the marker of event id of source, in the events
// table.
func MarkerKey(source, id string) map[string]dbtypes.AttributeValue {
	return seenKey(sourceKeyOf(source), id)
}

// RequestMarkerKey is the key of a request id's marker, in the jobs
// table.
func RequestMarkerKey(requestID string) map[string]dbtypes.AttributeValue {
	return markerKey(requestID)
}

// CrashAfterMarker makes Enqueue stop after writing its request marker,
// returning err, as a server dying there would.
func CrashAfterMarker(s *Store, err error) {
	s.hooks.afterMarker = func(context.Context) error { return err }
}

// CrashAfterScatterBatches makes CreateScatter stop after writing the
// batches, before the record, returning err, as a server dying there would.
func CrashAfterScatterBatches(s *Store, err error) {
	s.hooks.afterScatterBatches = func(context.Context) error { return err }
}

// SetRollForwardAfter shortens the wait before an enqueue is finished by
// another caller.
func SetRollForwardAfter(s *Store, d time.Duration) { s.rollForwardAfter = d }

// Watching is how many jobs the store's watcher keeps anything for.
func Watching(s *Store) int { return s.watch.size() }

// SlowPollInterval is how often the store polls watched jobs nobody
// follows on it.
func SlowPollInterval(s *Store) time.Duration { return s.cfg.WatchPollInterval * slowPolls }

// WatchRenewEvery is how often a replica with followers of a job writes
// so again.
const WatchRenewEvery = watchRenewEvery

// Announced is how many times the store wrote that it has followers of a
// job.
func Announced(s *Store) int {
	s.shares.mu.Lock()
	defer s.shares.mu.Unlock()
	return s.shares.announced
}

// WatchLoops is how many times the store started polling for watches.
func WatchLoops(s *Store) int {
	s.watch.mu.Lock()
	defer s.watch.mu.Unlock()
	return s.watch.started
}

// SetListScan shortens the work of one List call with a state filter: at
// most rounds queries of perQuery index entries.
func SetListScan(s *Store, perQuery, rounds int) { s.listScan, s.listRounds = perQuery, rounds }

// SetStatsScan shortens the by-queue entries QueueStats examines per
// queue.
func SetStatsScan(s *Store, n int) { s.statsScan = n }

// SetEndedScan shortens the work of one EndedBefore call: at most rounds
// queries of perQuery by-time entries.
func SetEndedScan(s *Store, perQuery, rounds int) { s.endedScan, s.endedRounds = perQuery, rounds }

// SetEndedFresh changes how long EndedPerMinute answers a queue from its
// last walk of the same window.
func SetEndedFresh(s *Store, d time.Duration) {
	s.ended.mu.Lock()
	defer s.ended.mu.Unlock()
	s.ended.fresh = d
}

// AWSErr is awsErr.
var AWSErr = awsErr

// Calls counts the AWS operations a store makes, by "Service.Operation",
// and the DynamoDB capacity they consumed as the server reports it (every
// DynamoDB call is made with ReturnConsumedCapacity TOTAL).
type Calls struct {
	mu       sync.Mutex
	n        map[string]int
	capacity map[string]float64
	scanned  int // items DynamoDB examined for queries
}

// OpenCounting opens a store that counts its AWS calls, with extra SDK
// middleware inside the counting (to hold or change requests).
func OpenCounting(ctx context.Context, cfg Config, extra ...func(*middleware.Stack) error) (*Store, *Calls, error) {
	c := &Calls{n: map[string]int{}, capacity: map[string]float64{}}
	count := func(st *middleware.Stack) error {
		return st.Initialize.Add(middleware.InitializeMiddlewareFunc("spool-count",
			func(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
				askCapacity(in.Parameters)
				out, md, err := next.HandleInitialize(ctx, in)
				op := awsmiddleware.GetServiceID(ctx) + "." + awsmiddleware.GetOperationName(ctx)
				c.mu.Lock()
				c.n[op]++
				if err == nil {
					c.capacity[op] += consumed(out.Result)
					if q, ok := out.Result.(*dynamodb.QueryOutput); ok {
						c.scanned += int(q.ScannedCount)
					}
				}
				c.mu.Unlock()
				return out, md, err
			}), middleware.After)
	}
	s, err := open(ctx, cfg, append([]func(*middleware.Stack) error{count}, extra...)...)
	return s, c, err
}

func askCapacity(in any) {
	total := dbtypes.ReturnConsumedCapacityTotal
	switch in := in.(type) {
	case *dynamodb.GetItemInput:
		in.ReturnConsumedCapacity = total
	case *dynamodb.PutItemInput:
		in.ReturnConsumedCapacity = total
	case *dynamodb.UpdateItemInput:
		in.ReturnConsumedCapacity = total
	case *dynamodb.QueryInput:
		in.ReturnConsumedCapacity = total
	case *dynamodb.BatchGetItemInput:
		in.ReturnConsumedCapacity = total
	case *dynamodb.BatchWriteItemInput:
		in.ReturnConsumedCapacity = total
	}
}

func consumed(out any) float64 {
	one := func(c *dbtypes.ConsumedCapacity) float64 {
		if c == nil || c.CapacityUnits == nil {
			return 0
		}
		return *c.CapacityUnits
	}
	many := func(cs []dbtypes.ConsumedCapacity) (sum float64) {
		for i := range cs {
			sum += one(&cs[i])
		}
		return sum
	}
	switch out := out.(type) {
	case *dynamodb.GetItemOutput:
		return one(out.ConsumedCapacity)
	case *dynamodb.PutItemOutput:
		return one(out.ConsumedCapacity)
	case *dynamodb.UpdateItemOutput:
		return one(out.ConsumedCapacity)
	case *dynamodb.QueryOutput:
		return one(out.ConsumedCapacity)
	case *dynamodb.BatchGetItemOutput:
		return many(out.ConsumedCapacity)
	case *dynamodb.BatchWriteItemOutput:
		return many(out.ConsumedCapacity)
	}
	return 0
}

// Take returns the counts and capacities so far and starts again from
// zero.
func (c *Calls) Take() (calls map[string]int, capacity map[string]float64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	calls, capacity = c.n, c.capacity
	c.n, c.capacity, c.scanned = map[string]int{}, map[string]float64{}, 0
	return calls, capacity
}

// Scanned is how many items DynamoDB examined for queries since the last
// Take, whether or not they passed the queries' filters.
func (c *Calls) Scanned() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.scanned
}

// Client returns the store's DynamoDB client, for tests that look at the
// tables directly.
func Client(s *Store) *dynamodb.Client { return s.clients.db }

// SendRaw puts a message with any body on a spool queue's SQS queue.
func SendRaw(ctx context.Context, s *Store, queue, body string) error {
	url, err := s.queues.url(ctx, queue)
	if err != nil {
		return err
	}
	_, err = s.clients.sqs.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(url), MessageBody: aws.String(body)})
	return err
}

// QueueCounts returns how many messages a spool queue's SQS queue holds
// (as SQS estimates it) and how many of them are in flight.
func QueueCounts(ctx context.Context, s *Store, queue string) (all, inFlight int, err error) {
	url, err := s.queues.url(ctx, queue)
	if err != nil {
		return 0, 0, err
	}
	out, err := s.clients.sqs.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: aws.String(url),
		AttributeNames: []sqstypes.QueueAttributeName{sqstypes.QueueAttributeNameApproximateNumberOfMessages, sqstypes.QueueAttributeNameApproximateNumberOfMessagesNotVisible}})
	if err != nil {
		return 0, 0, err
	}
	all, _ = strconv.Atoi(out.Attributes[string(sqstypes.QueueAttributeNameApproximateNumberOfMessages)])
	inFlight, _ = strconv.Atoi(out.Attributes[string(sqstypes.QueueAttributeNameApproximateNumberOfMessagesNotVisible)])
	return all, inFlight, nil
}

// Table definitions and queue settings, to check deploy/aws/spool.yaml
// against.
var (
	JobsTable        = jobsTable
	EventsTable      = eventsTable
	MessageRetention = messageRetention
	QueueWaitSeconds = queueWaitSeconds
)

// RawJob is every byte the store keeps in a job's item and in the marker of
// its request id, attribute after attribute (nil: neither is there).
func RawJob(ctx context.Context, s *Store, id string) ([]byte, error) {
	var out []byte
	get := func(key map[string]dbtypes.AttributeValue) (map[string]dbtypes.AttributeValue, error) {
		r, err := s.clients.db.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(s.cfg.JobsTable), Key: key, ConsistentRead: aws.Bool(true)})
		if err != nil {
			return nil, err
		}
		out = appendAttrs(out, r.Item)
		return r.Item, nil
	}
	it, err := get(jobKey(id))
	if err != nil || it == nil {
		return out, err
	}
	r, err := decodeJob(it)
	if err != nil {
		return nil, err
	}
	if rid := r.spec.GetRequestId(); rid != "" {
		_, err = get(markerKey(rid))
	}
	return out, err
}

// appendAttrs appends the bytes of every value in it, nested ones too.
func appendAttrs(out []byte, it map[string]dbtypes.AttributeValue) []byte {
	for k, v := range it {
		out = appendAttr(append(out, k...), v)
	}
	return out
}

func appendAttr(out []byte, v dbtypes.AttributeValue) []byte {
	switch v := v.(type) {
	case *dbtypes.AttributeValueMemberB:
		return append(out, v.Value...)
	case *dbtypes.AttributeValueMemberS:
		return append(out, v.Value...)
	case *dbtypes.AttributeValueMemberN:
		return append(out, v.Value...)
	case *dbtypes.AttributeValueMemberL:
		for _, e := range v.Value {
			out = appendAttr(out, e)
		}
	case *dbtypes.AttributeValueMemberM:
		out = appendAttrs(out, v.Value)
	case *dbtypes.AttributeValueMemberBS:
		for _, b := range v.Value {
			out = append(out, b...)
		}
	case *dbtypes.AttributeValueMemberSS:
		for _, s := range v.Value {
			out = append(out, s...)
		}
	}
	return out
}

// longPolls counts a store's SQS long polls under way, by queue URL: sent
// to SQS and not yet answered.
type longPolls struct {
	mu sync.Mutex
	n  map[string]int
}

var polling sync.Map // *Store -> *longPolls

// OpenPolling opens a store whose SQS long polls under way Polling counts.
func OpenPolling(ctx context.Context, cfg Config) (*Store, error) {
	p := &longPolls{n: map[string]int{}}
	s, err := open(ctx, cfg, func(st *middleware.Stack) error {
		return st.Initialize.Add(middleware.InitializeMiddlewareFunc("spool-long-polls",
			func(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
				r, ok := in.Parameters.(*sqs.ReceiveMessageInput)
				if !ok || r.WaitTimeSeconds == 0 {
					return next.HandleInitialize(ctx, in)
				}
				// Counted once the request is on the wire, so that SQS
				// has it (on loopback) before anything the test does
				// next; uncounted when the answer is back.
				url := aws.ToString(r.QueueUrl)
				var mu sync.Mutex
				counted, over := false, false
				ctx = httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{WroteRequest: func(httptrace.WroteRequestInfo) {
					mu.Lock()
					defer mu.Unlock()
					if !counted && !over {
						counted = true
						p.add(url, 1)
					}
				}})
				defer func() {
					mu.Lock()
					defer mu.Unlock()
					if counted {
						p.add(url, -1)
					}
					over = true
				}()
				return next.HandleInitialize(ctx, in)
			}), middleware.After)
	})
	if err == nil {
		polling.Store(s, p)
	}
	return s, err
}

func (p *longPolls) add(url string, d int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.n[url] += d
}

// Polling is how many SQS long polls of queue a store opened by
// OpenPolling has under way.
func Polling(s *Store, queue string) int {
	v, ok := polling.Load(s)
	if !ok {
		panic("awsstore.Polling of a store not opened by OpenPolling")
	}
	s.queues.mu.Lock()
	url, known := s.queues.urls[queue]
	s.queues.mu.Unlock()
	if !known {
		return 0
	}
	p := v.(*longPolls)
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.n[url]
}

// MissingJobReads is how many more times a young message's missing job is
// read before the message is hidden.
var MissingJobReads = len(missingJobWaits)

// ForgetSettings makes the store's next Dequeue of queue read the
// queue's settings item, as it does once a second.
func ForgetSettings(s *Store, queue string) { s.limits.forget(queue) }

// OtherPriorities are the priorities with SQS queues of their own, as
// Provision makes them.
func OtherPriorities() []string {
	var out []string
	for _, p := range otherPriorities() {
		out = append(out, strconv.Itoa(int(p)))
	}
	return out
}
