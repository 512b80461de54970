package scatter_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"go.opentelemetry.io/otel/metric/noop"
	"google.golang.org/protobuf/types/known/timestamppb"

	spoolv1 "github.com/spool-run/spool/gen/spool/v1"
	"github.com/spool-run/spool/internal/blob/dirblob"
	"github.com/spool-run/spool/internal/mototest"
	"github.com/spool-run/spool/internal/s3items"
	"github.com/spool-run/spool/internal/scatter"
	"github.com/spool-run/spool/internal/store"
	"github.com/spool-run/spool/internal/store/backends/memstore"
	"github.com/spool-run/spool/itembatch"
)

// TestReadingResumes: a server that takes over the reading of a scatter
// whose reader stopped keeps the batches that reader recorded, cuts the
// same batches again from the start and writes only the ones after; a
// reader whose claim still holds is left alone.
func TestReadingResumes(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	moto := mototest.For(t)
	s3c := s3.NewFromConfig(moto.AWSConfig(), func(o *s3.Options) {
		o.UsePathStyle, o.DisableLogOutputChecksumValidationSkipped = true, true
	})
	bucket := mototest.NewName("resume")
	if _, err := s3c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(bucket)}); err != nil {
		t.Fatal(err)
	}
	var body strings.Builder
	for i := range 20 {
		fmt.Fprintf(&body, "{\"k\":%d}\n", i)
	}
	if _, err := s3c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String("items.jsonl"), Body: strings.NewReader(body.String())}); err != nil {
		t.Fatal(err)
	}
	items, _ := itembatch.ReadItems(strings.NewReader(body.String()))
	want, _, _ := itembatch.Split(items, itembatch.Config{MaxItems: 3})

	st := memstore.New()
	blobs, err := dirblob.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	counter, _ := noop.NewMeterProvider().Meter("").Int64Counter("n")
	d := scatter.NewDriver(scatter.DriverOptions{
		Store: st, Blobs: blobs, S3: s3items.New(moto.AWSConfig(), s3items.Config{PathStyle: true}),
		Execution: func(*spoolv1.JobParams) *spoolv1.ExecutionConfig {
			return &spoolv1.ExecutionConfig{Batching: &spoolv1.BatchingConfig{}}
		},
		Log:     slog.New(slog.DiscardHandler),
		Metrics: scatter.Metrics{Enqueued: counter, BatchesCreated: counter, BatchesCompleted: counter, BatchesFailed: counter},
	})
	wait := d.Serve(ctx)
	defer func() { cancel(); wait() }()

	spec := &spoolv1.ScatterSpec{Queue: "q", Params: &spoolv1.JobParams{Script: "true"}, MaxConcurrency: 1, MaxAttempts: 1,
		Source: &spoolv1.ScatterSource{Items: "s3://" + bucket + "/items.jsonl", MaxItemsPerBatch: 3}}
	if err := scatter.CheckSpec(spec); err != nil {
		t.Fatal(err)
	}
	rec := scatter.NewFromSource(spec, time.Now())
	id := rec.Scatter.GetScatterId()
	if err := st.CreateScatter(ctx, rec, nil); err != nil {
		t.Fatal(err)
	}
	// An earlier reader recorded three batches, then stopped. Its
	// batches are marked, so that a rewrite would show.
	const recorded = 3
	kept := `["kept"]`
	rec, _ = st.GetScatter(ctx, id)
	p := rec.Scatter.GetProgress()
	p.BatchCount, p.Waiting, p.ItemCount = recorded, recorded, recorded*3
	rec.Ended, rec.Failed = store.NewBits(recorded), store.NewBits(recorded)
	for i := range int32(recorded) {
		if _, err := blobs.Put(ctx, scatter.BatchKey(id, i), strings.NewReader(kept)); err != nil {
			t.Fatal(err)
		}
	}
	// Its claim still holds: nobody else reads.
	rec.Scatter.Reading = &spoolv1.ScatterReading{ItemsRead: 10, Reader: "another server", ReaderUntil: timestamppb.New(time.Now().Add(time.Hour))}
	if err := st.UpdateScatter(ctx, rec); err != nil {
		t.Fatal(err)
	}
	if err := d.Drive(ctx, id); err != nil {
		t.Fatal(err)
	}
	if _, _, err := blobs.Get(ctx, scatter.BatchKey(id, recorded), 0, -1); err == nil {
		t.Fatal("a server read the items while another's claim held")
	}
	// The claim lapses: this server takes over.
	rec, _ = st.GetScatter(ctx, id)
	rec.Scatter.Reading.ReaderUntil = timestamppb.New(time.Now().Add(-time.Second))
	if err := st.UpdateScatter(ctx, rec); err != nil {
		t.Fatal(err)
	}
	if err := d.Drive(ctx, id); err != nil {
		t.Fatal(err)
	}
	for {
		rec, err = st.GetScatter(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if rec.Scatter.GetReading().GetDone() {
			break
		}
		select {
		case <-d.Woken(): // a reader's checkpoint
		case <-time.After(10 * time.Second):
			t.Fatalf("the reading did not end: %v", rec.Scatter.GetReading())
		}
	}
	if p := rec.Scatter.GetProgress(); p.GetBatchCount() != int32(len(want)) || p.GetItemCount() != int64(len(items)) || rec.Scatter.GetReading().GetItemsRead() != int64(len(items)) {
		t.Fatalf("after the reading: %v, %v; want %d batches of %d items", p, rec.Scatter.GetReading(), len(want), len(items))
	}
	if len(rec.Ended) != (len(want)+7)/8 {
		t.Fatalf("ended bits for %d batches, want %d", len(rec.Ended)*8, len(want))
	}
	if rec.Scatter.GetReading().GetEtag() == "" {
		t.Fatal("the reading did not record the object's ETag")
	}
	for i, w := range want {
		r, _, err := blobs.Get(ctx, scatter.BatchKey(id, int32(i)), 0, -1)
		if err != nil {
			t.Fatalf("batch %d: %v", i, err)
		}
		got, _ := io.ReadAll(r)
		r.Close()
		if i < recorded {
			if string(got) != kept {
				t.Fatalf("batch %d, recorded by the first reader, was written again: %s", i, got)
			}
		} else if string(got) != string(w.JSON()) {
			t.Fatalf("batch %d: %s, want %s", i, got, w.JSON())
		}
	}

	// An object replaced since its reading began is not read again: a
	// taking-over reader fails the scatter saying so.
	rec = scatter.NewFromSource(spec, time.Now())
	id = rec.Scatter.GetScatterId()
	rec.Scatter.Reading.Etag = `"an-older-version"`
	if err := st.CreateScatter(ctx, rec, nil); err != nil {
		t.Fatal(err)
	}
	if err := d.Drive(ctx, id); err != nil {
		t.Fatal(err)
	}
	for rec.Scatter.GetState() != spoolv1.ScatterState_SCATTER_STATE_FAILED {
		select {
		case <-d.Woken():
		case <-time.After(10 * time.Second):
			t.Fatalf("a scatter of a replaced object is %v", rec.Scatter.GetState())
		}
		if rec, err = st.GetScatter(ctx, id); err != nil {
			t.Fatal(err)
		}
	}
	if e := rec.Scatter.GetError(); !strings.Contains(e, "was replaced since the scatter began reading it") || rec.Scatter.GetReading().GetDone() {
		t.Fatalf("a scatter of a replaced object failed with %q, reading %v", e, rec.Scatter.GetReading())
	}
}

// TestToleranceWhileReading: a percentage of failures is judged against
// all the batches, so not while the items are still being read; a count
// is judged at once.
func TestToleranceWhileReading(t *testing.T) {
	pct := float32(10)
	rec := scatter.NewFromSource(&spoolv1.ScatterSpec{ToleratedFailurePercentage: &pct}, time.Now())
	rec.Scatter.GetProgress().BatchCount = 3
	rec.Failed = store.NewBits(3)
	rec.Failed.Set(0)
	if scatter.TooManyFailed(rec) {
		t.Fatal("1 of the first 3 batches failed a scatter still being read, tolerating 10%")
	}
	rec.Scatter.GetReading().Done = true
	if !scatter.TooManyFailed(rec) {
		t.Fatal("1 of 3 batches failed, tolerating 10%, and the scatter goes on")
	}
	zero := int32(0)
	rec.Scatter.GetReading().Done = false
	rec.Scatter.GetSpec().ToleratedFailureCount = &zero
	if !scatter.TooManyFailed(rec) {
		t.Fatal("a failure past a count of 0 waits for the reading")
	}
}
