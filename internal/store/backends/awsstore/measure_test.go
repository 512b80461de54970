package awsstore_test

import (
	"context"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	spoolv1 "github.com/spool-run/spool/gen/spool/v1"
	"github.com/spool-run/spool/internal/store"
	"github.com/spool-run/spool/internal/store/backends/awsstore"
	"github.com/spool-run/spool/internal/store/backends/awsstore/awstest"
	"github.com/spool-run/spool/internal/store/storekit"
)

// itemSize is an item's size as DynamoDB bills it: each attribute's name
// plus its value (strings and binaries by length, numbers about one byte
// per two significant digits plus one, lists and maps 3 bytes plus one per
// element).
func itemSize(it map[string]types.AttributeValue) int {
	n := 0
	for name, v := range it {
		n += len(name) + valueSize(v)
	}
	return n
}

func valueSize(v types.AttributeValue) int {
	switch v := v.(type) {
	case *types.AttributeValueMemberS:
		return len(v.Value)
	case *types.AttributeValueMemberB:
		return len(v.Value)
	case *types.AttributeValueMemberN:
		digits := len(strings.Trim(strings.TrimLeft(v.Value, "-"), "0"))
		return 1 + (max(digits, 1)+1)/2
	case *types.AttributeValueMemberBOOL, *types.AttributeValueMemberNULL:
		return 1
	case *types.AttributeValueMemberL:
		n := 3
		for _, e := range v.Value {
			n += 1 + valueSize(e)
		}
		return n
	case *types.AttributeValueMemberM:
		return 3 + len(v.Value) + itemSize(v.Value)
	}
	return 0
}

// storedItems reads a job's event items back from the table.
func storedItems(t *testing.T, s *awsstore.Store, jobID string) []map[string]types.AttributeValue {
	t.Helper()
	in := &dynamodb.QueryInput{
		TableName:                 aws.String(s.Config().EventsTable),
		KeyConditionExpression:    aws.String("#j = :j"),
		ExpressionAttributeNames:  map[string]string{"#j": "job_id"},
		ExpressionAttributeValues: map[string]types.AttributeValue{":j": &types.AttributeValueMemberS{Value: jobID}},
	}
	var out []map[string]types.AttributeValue
	for p := dynamodb.NewQueryPaginator(awsstore.Client(s), in); p.HasMorePages(); {
		page, err := p.NextPage(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, page.Items...)
	}
	return out
}

// unbatchedJob is `seq 1 n` stored the way it was before batching: one
// OUTPUT_DATA event per line.
func unbatchedJob(n int) []*spoolv1.JobEvent {
	evs := []*spoolv1.JobEvent{startEvent(1)}
	for i := 1; i <= n; i++ {
		seq := int64(i + 1)
		evs = append(evs, &spoolv1.JobEvent{Sequence: seq, Timestamp: ts(seq), EventType: spoolv1.EventType_EVENT_TYPE_OUTPUT_DATA,
			EventData: &spoolv1.JobEvent_OutputData{OutputData: &spoolv1.OutputEvent{Output: fmt.Appendf(nil, "%d", i), Stream: spoolv1.StreamType_STREAM_TYPE_STDOUT}}})
	}
	return append(evs, endEvent(int64(n+2)))
}

// costs are what one job cost.
type costs struct {
	items, itemWCU, indexWCU int
	appendCalls              int
	publishWCU               float64 // every write of the publish, as the server counts it
	publishRCU               float64 // its reads of the job item
	replayItems              int
	replayRCU                float64 // strongly consistent, as Read reads
}

// measure stores a 10,000-line job and replays it from line 9,000.
func measure(t *testing.T, s *awsstore.Store, calls *awsstore.Calls, nj store.NewJob, evs []*spoolv1.JobEvent) costs {
	l := running(t, s, nj, time.Minute)
	calls.Take()
	appendAll(t, s, l.LeaseRef, evs)
	n, capacity := calls.Take()
	var c costs
	c.appendCalls = (len(evs) + 24) / 25
	c.publishWCU = capacity["DynamoDB.BatchWriteItem"] + capacity["DynamoDB.UpdateItem"]
	c.publishRCU = capacity["DynamoDB.GetItem"]
	for _, it := range storedItems(t, s, l.JobID) {
		c.items++
		c.itemWCU += int(math.Ceil(float64(itemSize(it)) / 1024))
		if _, ok := it["last_line"]; ok {
			c.indexWCU++ // by-line holds keys only: well under 1 KB
		}
	}
	if float64(c.itemWCU) != capacity["DynamoDB.BatchWriteItem"] {
		t.Fatalf("item sizes give %d WCU, the server counted %v for the same writes", c.itemWCU, capacity["DynamoDB.BatchWriteItem"])
	}
	if n["DynamoDB.UpdateItem"] != c.appendCalls {
		t.Fatalf("%d head updates for %d appends, want 1 each (the commit)", n["DynamoDB.UpdateItem"], c.appendCalls)
	}
	calls.Take() // not the reads above
	stats := &store.ReadStats{}
	for _, err := range storekit.Read(context.Background(), s, store.ReadRequest{JobID: l.JobID, FromLine: 9000, Stats: stats}) {
		if err != nil {
			t.Fatal(err)
		}
	}
	_, capacity = calls.Take()
	c.replayItems = stats.ItemsRead
	c.replayRCU = capacity["DynamoDB.GetItem"] + capacity["DynamoDB.Query"]
	return c
}

// TestMeasureBatching logs what batching saves on DynamoDB, and what SQS
// requests a job costs (the figures in docs/aws.md):
//
//	go test ./internal/store/backends/awsstore -run TestMeasureBatching -v
func TestMeasureBatching(t *testing.T) {
	cfg := awstest.Shared(t).NewConfig(t)
	s, calls, err := awsstore.OpenCounting(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	q := newQueue()
	batchedJob := newJob(q)
	b := measure(t, s, calls, batchedJob, outputJob(10000, 50))
	plainJob := newJob(q)
	plainJob.Execution.Batching.MaxBatchSize = 1
	u := measure(t, s, calls, plainJob, unbatchedJob(10000))

	t.Logf("10,000-line job (`seq 1 10000`), published 25 events per call; WCU: 1 per KB started per item")
	t.Logf("%-44s %14s %14s", "", "batched (50)", "unbatched (1)")
	row := func(name string, bv, uv any) { t.Logf("%-44s %14v %14v", name, bv, uv) }
	row("event items written", b.items, u.items)
	row("  WCU of those items", b.itemWCU, u.itemWCU)
	row("  WCU of their by-line index entries", b.indexWCU, u.indexWCU)
	row("PublishEvents calls (Append)", b.appendCalls, u.appendCalls)
	row("  WCU of all their writes (items + head)", b.publishWCU, u.publishWCU)
	row("  total WCU with the index", b.publishWCU+float64(b.indexWCU), u.publishWCU+float64(u.indexWCU))
	row("  RCU (each call reads the job)", b.publishRCU, u.publishRCU)
	row("replay from line 9,000: items read", b.replayItems, u.replayItems)
	row("  RCU, strongly consistent (as Read does)", b.replayRCU, u.replayRCU)
	row("  RCU if eventually consistent", b.replayRCU/2, u.replayRCU/2)

	if b.items*40 > u.items || b.itemWCU*20 > u.itemWCU || b.replayItems > 23 || b.replayRCU*5 > u.replayRCU {
		t.Fatalf("batching saves less than it should: batched %+v, unbatched %+v", b, u)
	}

	// SQS requests of one job's life: enqueue, lease, one heartbeat, done.
	ctx := context.Background()
	calls.Take()
	if _, _, err := s.Enqueue(ctx, newJob(q)); err != nil {
		t.Fatal(err)
	}
	l := leaseOne(t, s, q, time.Minute)
	if _, _, err := s.Heartbeat(ctx, l.LeaseRef, time.Minute); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Complete(ctx, l.LeaseRef, &spoolv1.JobResult{}); err != nil {
		t.Fatal(err)
	}
	n, _ := calls.Take()
	sqsCalls := 0
	for op, k := range n {
		if strings.HasPrefix(op, "SQS.") {
			t.Logf("SQS per job: %-26s %d", op, k)
			sqsCalls += k
		}
	}
	t.Logf("SQS per job: %d requests (+1 ChangeMessageVisibility per further heartbeat)", sqsCalls)
	if sqsCalls != 4 {
		t.Fatalf("one job took %d SQS requests, want 4: %v", sqsCalls, n)
	}
}
