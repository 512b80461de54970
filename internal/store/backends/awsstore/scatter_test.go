package awsstore_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/google/uuid"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/spool-run/spool"
	spoolv1 "github.com/spool-run/spool/gen/spool/v1"
	"github.com/spool-run/spool/internal/store"
	"github.com/spool-run/spool/internal/store/backends/awsstore"
	"github.com/spool-run/spool/internal/store/backends/awsstore/awstest"
	"github.com/spool-run/spool/internal/store/storekit"
)

// scatterRec is the record of a new active scatter of n batches.
func scatterRec(n int32) *store.ScatterRecord {
	now := timestamppb.New(storekit.Now())
	return &store.ScatterRecord{
		Scatter: &spoolv1.Scatter{
			ScatterId: uuid.Must(uuid.NewV7()).String(),
			State:     spoolv1.ScatterState_SCATTER_STATE_RUNNING,
			Spec:      &spoolv1.ScatterSpec{Queue: "default", Params: &spoolv1.JobParams{Argv: []string{"cat"}}},
			Progress:  &spoolv1.ScatterProgress{BatchCount: n, Waiting: n},
			CreatedAt: now, UpdatedAt: now,
		},
		Active: true, Ended: store.NewBits(n), Failed: store.NewBits(n),
	}
}

// jsonOf is a JSON array of one string, size bytes in all.
func jsonOf(size int, fill byte) []byte {
	return []byte(`["` + string(bytes.Repeat([]byte{fill}, size-4)) + `"]`)
}

// batchItems returns the sizes of the items a batch is stored in, by
// chunk.
func batchItems(t *testing.T, s *awsstore.Store, id string, index int) []int {
	t.Helper()
	var sizes []int
	for p := dynamodb.NewQueryPaginator(awsstore.Client(s), &dynamodb.QueryInput{
		TableName:                 aws.String(s.Config().EventsTable),
		KeyConditionExpression:    aws.String("job_id = :k"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":k": &types.AttributeValueMemberS{Value: fmt.Sprintf("scatter#%s#b#%d", id, index)}},
		ProjectionExpression:      aws.String("payload"),
		ConsistentRead:            aws.Bool(true),
	}); p.HasMorePages(); {
		page, err := p.NextPage(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		for _, it := range page.Items {
			b, _ := it["payload"].(*types.AttributeValueMemberB)
			if b == nil {
				sizes = append(sizes, 0)
				continue
			}
			sizes = append(sizes, len(b.Value))
		}
	}
	return sizes
}

// TestScatterBatchChunks: batches are split at the chunk size, each chunk
// an item under DynamoDB's limit, and read back whole, around the
// boundaries and for a batch the size of the largest the service takes.
func TestScatterBatchChunks(t *testing.T) {
	t.Parallel()
	s := freshStore(t)
	ctx := context.Background()
	const chunk = 350 << 10
	sizes := []int{0, 2, chunk, chunk + 1, 2 * chunk, 26*chunk - 10}
	batches := make([][]byte, len(sizes))
	for i, n := range sizes {
		if n >= 4 {
			batches[i] = jsonOf(n, byte('a'+i))
		} else {
			batches[i] = []byte("[]")[:n]
		}
	}
	rec := scatterRec(int32(len(batches)))
	if err := s.CreateScatter(ctx, rec, batches); err != nil {
		t.Fatal(err)
	}
	id := rec.Scatter.GetScatterId()
	for i, want := range batches {
		got, err := s.ScatterBatch(ctx, id, int32(i))
		if err != nil || !bytes.Equal(got, want) {
			t.Fatalf("batch %d: %d bytes (%v), want %d", i, len(got), err, len(want))
		}
		items := batchItems(t, s, id, i)
		if wantN := max(1, (len(want)+chunk-1)/chunk); len(items) != wantN {
			t.Errorf("batch %d of %d bytes is %d items, want %d", i, len(want), len(items), wantN)
		}
		for _, n := range items {
			if n > chunk {
				t.Errorf("batch %d has a chunk of %d bytes, more than %d", i, n, chunk)
			}
		}
	}
	for _, i := range []int32{-1, int32(len(batches))} {
		if _, err := s.ScatterBatch(ctx, id, i); !errors.Is(err, spool.ErrNotFound) {
			t.Errorf("batch %d: %v, want not found", i, err)
		}
	}
	if _, err := s.ScatterBatch(ctx, uuid.Must(uuid.NewV7()).String(), 0); !errors.Is(err, spool.ErrNotFound) {
		t.Errorf("batch of an unknown scatter: %v, want not found", err)
	}
}

// TestScatterCreateCrash: a create that dies after the batches and before
// the record leaves no scatter; a retry with the same id (here with a
// shorter first batch, which the crashed try stored in more chunks)
// creates it, and reads give the retry's batches, nothing of the first
// try's.
func TestScatterCreateCrash(t *testing.T) {
	t.Parallel()
	cfg := awstest.Shared(t).NewConfig(t)
	crashing, other := openStore(t, cfg), openStore(t, cfg)
	ctx := context.Background()
	crash := errors.New("server died")
	awsstore.CrashAfterScatterBatches(crashing, crash)
	rec := scatterRec(2)
	id := rec.Scatter.GetScatterId()
	first := [][]byte{jsonOf(900<<10, 'x'), []byte(`[1]`)}
	if err := crashing.CreateScatter(ctx, rec, first); !errors.Is(err, crash) {
		t.Fatalf("crashing create: %v", err)
	}
	if rec.Version != 0 {
		t.Fatalf("a failed create set the version to %d", rec.Version)
	}
	if _, err := other.GetScatter(ctx, id); !errors.Is(err, spool.ErrNotFound) {
		t.Fatalf("scatter after a create died before its record: %v, want not found", err)
	}
	for _, active := range []bool{true, false} {
		recs, _, err := other.ListScatters(ctx, store.ScatterFilter{Active: active})
		if err != nil || len(recs) != 0 {
			t.Fatalf("listing (active %v) after a crashed create: %d scatters, %v", active, len(recs), err)
		}
	}

	retry := [][]byte{[]byte(`["short"]`), []byte(`[2]`)}
	if err := other.CreateScatter(ctx, rec, retry); err != nil {
		t.Fatalf("retried create: %v", err)
	}
	for i, want := range retry {
		got, err := other.ScatterBatch(ctx, id, int32(i))
		if err != nil || !bytes.Equal(got, want) {
			t.Fatalf("batch %d after the retry: %q (%v), want %q", i, got, err, want)
		}
	}
	got, err := other.GetScatter(ctx, id)
	if err != nil || got.Version != 1 {
		t.Fatalf("scatter after the retry: %+v, %v", got, err)
	}
}

// TestScatterUpdate: an update of a missing scatter is not found, and
// moving a scatter between active and not moves it between listings.
func TestScatterUpdate(t *testing.T) {
	t.Parallel()
	s := freshStore(t)
	ctx := context.Background()
	missing := scatterRec(1)
	missing.Version = 1
	if err := s.UpdateScatter(ctx, missing); !errors.Is(err, spool.ErrNotFound) {
		t.Fatalf("update of a missing scatter: %v, want not found", err)
	}
	if missing.Version != 1 {
		t.Fatalf("a failed update set the version to %d", missing.Version)
	}
	rec := scatterRec(1)
	if err := s.CreateScatter(ctx, rec, [][]byte{[]byte(`[1]`)}); err != nil {
		t.Fatal(err)
	}
	listed := func(active bool) []string {
		t.Helper()
		recs, next, err := s.ListScatters(ctx, store.ScatterFilter{Active: active})
		if err != nil || next != "" {
			t.Fatalf("list: next %q, %v", next, err)
		}
		var ids []string
		for _, r := range recs {
			ids = append(ids, fmt.Sprintf("%s:%v:%d", r.Scatter.GetScatterId(), r.Active, r.Version))
		}
		return ids
	}
	id := rec.Scatter.GetScatterId()
	for _, step := range []struct {
		active   bool
		all, act []string
	}{
		{true, []string{id + ":true:2"}, []string{id + ":true:2"}},
		{false, []string{id + ":false:3"}, nil},
		{true, []string{id + ":true:4"}, []string{id + ":true:4"}},
	} {
		rec.Active = step.active
		if err := s.UpdateScatter(ctx, rec); err != nil {
			t.Fatal(err)
		}
		if got := listed(false); !slices.Equal(got, step.all) {
			t.Fatalf("listed %v, want %v", got, step.all)
		}
		if got := listed(true); !slices.Equal(got, step.act) {
			t.Fatalf("listed as active %v, want %v", got, step.act)
		}
	}
}

// TestActiveScattersListedCheaply: listing the active scatters reads
// their index entries only, however many finished ones there are, and
// pages of the full listing are exact: the last full page says there is
// no next one.
func TestActiveScattersListedCheaply(t *testing.T) {
	t.Parallel()
	s, calls, err := awsstore.OpenCounting(context.Background(), awstest.Shared(t).NewConfig(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	ctx := context.Background()
	const inactive, active = 40, 3
	var activeIDs, all []string
	for i := range inactive + active {
		rec := scatterRec(1)
		rec.Active = i%15 == 0 // 0, 15, 30: the rest are finished
		if err := s.CreateScatter(ctx, rec, [][]byte{[]byte(`[1]`)}); err != nil {
			t.Fatal(err)
		}
		if rec.Active {
			activeIDs = append(activeIDs, rec.Scatter.GetScatterId())
		}
		all = append(all, rec.Scatter.GetScatterId())
	}
	slices.Reverse(activeIDs)
	slices.Reverse(all)

	calls.Take()
	recs, next, err := s.ListScatters(ctx, store.ScatterFilter{Active: true, Limit: 10})
	if err != nil || next != "" {
		t.Fatalf("active listing: next %q, %v", next, err)
	}
	var got []string
	for _, r := range recs {
		got = append(got, r.Scatter.GetScatterId())
	}
	if !slices.Equal(got, activeIDs) {
		t.Fatalf("active listing %v, want %v", got, activeIDs)
	}
	if n := calls.Scanned(); n != active {
		t.Fatalf("the active listing examined %d index entries, want %d", n, active)
	}

	got = nil
	cursor := ""
	for pages := 0; ; pages++ {
		if pages > len(all) {
			t.Fatal("the listing never ended")
		}
		recs, next, err := s.ListScatters(ctx, store.ScatterFilter{Limit: 5, Cursor: cursor})
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range recs {
			got = append(got, r.Scatter.GetScatterId())
		}
		if next == "" {
			if len(recs) == 0 {
				t.Fatal("an empty last page: the page before it should have said it was the last")
			}
			break
		}
		cursor = next
	}
	if !slices.Equal(got, all) {
		t.Fatalf("full listing\n%v\nwant\n%v", got, all)
	}
}

// TestManyScatterBatches: a scatter of 1,000 batches of 10 KB is written
// in 40 BatchWriteItem calls, a few at once, and quickly.
func TestManyScatterBatches(t *testing.T) {
	t.Parallel()
	s, calls, err := awsstore.OpenCounting(context.Background(), awstest.Shared(t).NewConfig(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	ctx := context.Background()
	const n = 1000
	batches := make([][]byte, n)
	for i := range batches {
		batches[i] = jsonOf(10<<10, byte('a'+i%26))
	}
	rec := scatterRec(n)
	calls.Take()
	start := time.Now()
	if err := s.CreateScatter(ctx, rec, batches); err != nil {
		t.Fatal(err)
	}
	took := time.Since(start)
	t.Logf("created a scatter of %d batches of 10 KB in %v", n, took)
	if c, _ := calls.Take(); c["DynamoDB.BatchWriteItem"] != n/25 {
		t.Errorf("%d BatchWriteItem calls, want %d", c["DynamoDB.BatchWriteItem"], n/25)
	}
	// Generous: a loaded test machine takes about a second.
	if took > 20*time.Second {
		t.Errorf("creating the scatter took %v", took)
	}
	for _, i := range []int32{0, 499, n - 1} {
		got, err := s.ScatterBatch(ctx, rec.Scatter.GetScatterId(), i)
		if err != nil || !bytes.Equal(got, batches[i]) {
			t.Fatalf("batch %d: %d bytes, %v", i, len(got), err)
		}
	}
}

// TestNamedJobMessageWaits: a job named by its caller (a scatter's batch
// job, named after a scatter made long ago) whose message arrives before
// the job item is written is waited for, as any new job's is: the wait
// goes by when the message was sent, not by the id's time.
func TestNamedJobMessageWaits(t *testing.T) {
	t.Parallel()
	s := freshStore(t)
	ctx := context.Background()
	q := newQueue()
	old := v7At(time.Now().Add(-time.Hour))
	for _, body := range []string{
		fmt.Sprintf(`{"job_id":"%s.4","queue":%q,"attempt":0,"sent":%d}`, old, q, time.Now().UnixMilli()),
		fmt.Sprintf(`{"job_id":"%s.5","queue":%q,"attempt":0}`, old, q), // no sent time, an old id: dropped
	} {
		if err := awsstore.SendRaw(ctx, s, q, body); err != nil {
			t.Fatal(err)
		}
	}
	ls, err := s.Dequeue(ctx, store.DequeueRequest{Queue: q, Max: 10, LeaseDuration: time.Minute})
	if err != nil || len(ls) != 0 {
		t.Fatalf("messages without jobs gave %d leases, err %v", len(ls), err)
	}
	wantQueue(t, s, q, 1, 1)

	// An enqueue of a named job sends a message that says when.
	nj := newJob(newQueue())
	nj.ID, nj.RequestID = old+".6", "scatter:"+old+".6"
	j, created, err := s.Enqueue(ctx, nj)
	if err != nil || !created || j.GetJobId() != nj.ID {
		t.Fatalf("enqueue: %v created=%v %v", j.GetJobId(), created, err)
	}
	if l := leaseOne(t, s, nj.Queue, time.Minute); l.JobID != nj.ID {
		t.Fatalf("leased %s, want %s", l.JobID, nj.ID)
	}
}
