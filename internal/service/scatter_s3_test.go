package service_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime"
	"runtime/debug"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/spool-run/spool"
	"github.com/spool-run/spool/client"
	"github.com/spool-run/spool/internal/mototest"
	"github.com/spool-run/spool/internal/service"
	"github.com/spool-run/spool/itembatch"
	"github.com/spool-run/spool/server"
	"github.com/spool-run/spool/spooltest"
	"github.com/spool-run/spool/worker"
)

// echoItems is a batch command whose result is its batch's items, as the
// input document has them.
const echoItems = `sed -n 's/^{"items":\(\[.*\]\),"batch_index".*/\1/p' "$SPOOL_BATCH_FILE" > "$SPOOL_RESULT"`

// s3Bucket is a bucket on a moto_server of the test's own.
type s3Bucket struct {
	moto   *mototest.Server
	client *s3.Client
	name   string
}

func newS3Bucket(t *testing.T) *s3Bucket {
	t.Helper()
	moto := mototest.For(t)
	b := &s3Bucket{moto: moto, name: mototest.NewName("items")}
	b.client = s3.NewFromConfig(moto.AWSConfig(), func(o *s3.Options) {
		o.UsePathStyle, o.DisableLogOutputChecksumValidationSkipped = true, true
	})
	if _, err := b.client.CreateBucket(context.Background(), &s3.CreateBucketInput{Bucket: aws.String(b.name)}); err != nil {
		t.Fatal(err)
	}
	return b
}

func (b *s3Bucket) put(t *testing.T, key, body string) string {
	t.Helper()
	if _, err := b.client.PutObject(context.Background(), &s3.PutObjectInput{Bucket: aws.String(b.name), Key: aws.String(key), Body: strings.NewReader(body)}); err != nil {
		t.Fatal(err)
	}
	return "s3://" + b.name + "/" + key
}

func (b *s3Bucket) get(t *testing.T, key string) string {
	t.Helper()
	out, err := b.client.GetObject(context.Background(), &s3.GetObjectInput{Bucket: aws.String(b.name), Key: aws.String(key)})
	if err != nil {
		t.Fatalf("reading s3://%s/%s: %v", b.name, key, err)
	}
	defer out.Body.Close()
	var buf bytes.Buffer
	_, _ = buf.ReadFrom(out.Body)
	return buf.String()
}

// s3Server is a server on the memory store that reads scatters' items
// from moto.
func (b *s3Bucket) s3Server(t *testing.T) *spooltest.Server {
	return newServer(t, func(c *server.Config) {
		c.Store.Type = "memory"
		c.Scatter.S3 = server.ScatterS3{Endpoint: b.moto.URL, PathStyle: true, Region: mototest.Region}
	})
}

// TestScatterItemsFromS3: the server reads items from S3 (JSON Lines, a
// JSON array, CSV, a prefix's listing) and cuts exactly the batches spool
// scatter cuts from the same file; a missing object or bucket fails the
// scatter naming it.
func TestScatterItemsFromS3(t *testing.T) {
	t.Parallel()
	b := newS3Bucket(t)
	srv := b.s3Server(t)
	spooltest.NewWorker(t, srv, worker.Config{Concurrency: 4})
	c := srv.Client()
	ctx := context.Background()

	var jsonl, array strings.Builder
	array.WriteString("[\n")
	for i := range 23 {
		fmt.Fprintf(&jsonl, "{\"k\": %d, \"g\": %d}\n", i, i%3)
		if i > 0 {
			array.WriteString(",\n")
		}
		fmt.Fprintf(&array, "  {\"k\": %d}", i)
	}
	array.WriteString("\n]\n")
	csv := "k,name\n1,one\n2,\"two, too\"\n3,three\n"

	// run scatters src and returns the batches its jobs saw, in order.
	run := func(t *testing.T, src spool.ScatterSource) (*spool.Scatter, [][]json.RawMessage) {
		t.Helper()
		sc, err := c.StartScatter(ctx, client.ScatterParams{Job: client.SubmitParams{Script: echoItems}, Source: &src, Gather: `cat > "$SPOOL_RESULT"`})
		if err != nil {
			t.Fatal(err)
		}
		sc = follow(t, c, sc.ID)
		if sc.State != spool.ScatterSucceeded {
			return sc, nil
		}
		gather, err := c.Job(ctx, sc.GatherJobID)
		if err != nil {
			t.Fatal(err)
		}
		var doc gatherDoc
		if err := json.Unmarshal([]byte(gather.Result.Output), &doc); err != nil {
			t.Fatalf("gather's input %q: %v", gather.Result.Output, err)
		}
		out := make([][]json.RawMessage, doc.BatchCount)
		for i := range out {
			if err := json.Unmarshal(doc.BatchResults[fmt.Sprint(i)], &out[i]); err != nil {
				t.Fatalf("batch %d's result %s: %v", i, doc.BatchResults[fmt.Sprint(i)], err)
			}
		}
		return sc, out
	}
	// wantBatches compares the batches the jobs saw with what itembatch
	// cuts from the same items here.
	wantBatches := func(t *testing.T, sc *spool.Scatter, got [][]json.RawMessage, items []itembatch.Item, cfg itembatch.Config) {
		t.Helper()
		want, _, err := itembatch.Split(items, cfg)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != len(want) {
			t.Fatalf("scatter %s (%s: %s) ran %d batches, want %d", sc.ID, sc.State, sc.Error, len(got), len(want))
		}
		for i := range want {
			var g bytes.Buffer
			_ = json.Compact(&g, mustJSON(t, got[i]))
			if g.String() != string(want[i].JSON()) {
				t.Fatalf("batch %d: %s, want %s", i, g.String(), want[i].JSON())
			}
		}
		wantProgress(t, sc, spool.ScatterSucceeded, len(want), 0, 0)
		if r := sc.Reading; r == nil || !r.Done || r.ItemsRead != int64(len(items)) || sc.Progress.ItemCount != int64(len(items)) || sc.Progress.ItemsDone != int64(len(items)) {
			t.Fatalf("reading %+v, progress %+v; want all %d items read and done", sc.Reading, sc.Progress, len(items))
		}
	}

	t.Run("json lines", func(t *testing.T) {
		url := b.put(t, "in/items.jsonl", jsonl.String())
		items, _ := itembatch.ReadItems(strings.NewReader(jsonl.String()))
		sc, got := run(t, spool.ScatterSource{Items: url, MaxItemsPerBatch: 4})
		wantBatches(t, sc, got, items, itembatch.Config{MaxItems: 4})
	})
	t.Run("json lines by group", func(t *testing.T) {
		url := b.put(t, "in/grouped.jsonl", jsonl.String())
		items, _ := itembatch.ReadItems(strings.NewReader(jsonl.String()))
		sc, got := run(t, spool.ScatterSource{Items: url, MaxItemsPerBatch: 3, GroupBy: "g"})
		// Batches come out as they close: the same batches as Split's,
		// in another order, so they are compared as sets.
		want, _, _ := itembatch.Split(items, itembatch.Config{MaxItems: 3, GroupBy: "g"})
		seen := map[string]bool{}
		for _, w := range want {
			seen[string(w.JSON())] = true
		}
		for i, g := range got {
			var buf bytes.Buffer
			_ = json.Compact(&buf, mustJSON(t, g))
			if !seen[buf.String()] {
				t.Fatalf("batch %d %s is not one Split cuts (%d batches)", i, buf.String(), len(want))
			}
			delete(seen, buf.String())
		}
		if len(seen) > 0 || sc.Progress.ItemsDone != int64(len(items)) {
			t.Fatalf("batches Split cuts that did not run: %v; progress %+v", seen, sc.Progress)
		}
	})
	t.Run("json array", func(t *testing.T) {
		url := b.put(t, "in/items.json", array.String())
		items, _ := itembatch.ReadItems(strings.NewReader(array.String()))
		sc, got := run(t, spool.ScatterSource{Items: url, MaxBytesPerBatch: 40})
		wantBatches(t, sc, got, items, itembatch.Config{MaxBytes: 40})
	})
	t.Run("csv", func(t *testing.T) {
		url := b.put(t, "in/table.csv", csv)
		items, _ := itembatch.ReadCSVItems(strings.NewReader(csv))
		sc, got := run(t, spool.ScatterSource{Items: url, MaxItemsPerBatch: 2})
		wantBatches(t, sc, got, items, itembatch.Config{MaxItems: 2})
	})
	t.Run("prefix", func(t *testing.T) {
		for i := range 5 {
			b.put(t, fmt.Sprintf("photos/%d.png", i), strings.Repeat("x", i+1))
		}
		sc, got := run(t, spool.ScatterSource{ItemsPrefix: "s3://" + b.name + "/photos/", MaxItemsPerBatch: 2})
		wantProgress(t, sc, spool.ScatterSucceeded, 3, 0, 0)
		var n int
		for _, batch := range got {
			for _, it := range batch {
				var o struct {
					Key  string
					Size int64
					Etag string
				}
				if err := json.Unmarshal(it, &o); err != nil || o.Key != fmt.Sprintf("photos/%d.png", n) || o.Size != int64(n+1) || o.Etag == "" {
					t.Fatalf("item %d: %s (%v)", n, it, err)
				}
				n++
			}
		}
		if n != 5 {
			t.Fatalf("%d objects listed, want 5", n)
		}
	})
	t.Run("results", func(t *testing.T) {
		one := 1
		sc, err := c.StartScatter(ctx, client.ScatterParams{
			Job:                   client.SubmitParams{Script: `[ "$SPOOL_BATCH_INDEX" != 1 ] || exit 3; printf '{"index":%d}' "$SPOOL_BATCH_INDEX" > "$SPOOL_RESULT"`},
			Batches:               batches(3, 2),
			ToleratedFailureCount: &one,
			Results:               "s3://" + b.name + "/out",
			Gather:                `cat > "$SPOOL_RESULT"`,
		})
		if err != nil {
			t.Fatal(err)
		}
		sc = follow(t, c, sc.ID)
		wantProgress(t, sc, spool.ScatterSucceeded, 2, 1, 0)
		dir := "out/" + sc.ID + "/"
		if want := "s3://" + b.name + "/" + dir + "manifest.json"; sc.ResultManifest != want {
			t.Fatalf("result manifest %q, want %q", sc.ResultManifest, want)
		}
		var runs []struct {
			BatchIndex int32
			JobID      string `json:"JobId"`
			Status     string
			Output     json.RawMessage
		}
		if err := json.Unmarshal([]byte(b.get(t, dir+"SUCCEEDED_2.json")), &runs); err != nil || len(runs) != 1 || runs[0].BatchIndex != 2 ||
			runs[0].Status != "SUCCEEDED" || string(runs[0].Output) != `{"index":2}` || runs[0].JobID != sc.ID+".2" {
			t.Fatalf("SUCCEEDED_2.json: %+v (%v)", runs, err)
		}
		if err := json.Unmarshal([]byte(b.get(t, dir+"FAILED_1.json")), &runs); err != nil || len(runs) != 1 || runs[0].Status != "FAILED" {
			t.Fatalf("FAILED_1.json: %+v (%v)", runs, err)
		}
		var m struct {
			DestinationBucket string
			ScatterID         string `json:"ScatterId"`
			ResultFiles       map[string][]struct {
				Key  string
				Size int64
			}
		}
		if err := json.Unmarshal([]byte(b.get(t, dir+"manifest.json")), &m); err != nil {
			t.Fatal(err)
		}
		keys := func(status string) (out []string) {
			for _, f := range m.ResultFiles[status] {
				if f.Size == 0 {
					t.Errorf("%s has no size in the manifest", f.Key)
				}
				out = append(out, strings.TrimPrefix(f.Key, dir))
			}
			return out
		}
		if m.DestinationBucket != b.name || m.ScatterID != sc.ID || !slices.Equal(keys("SUCCEEDED"), []string{"SUCCEEDED_0.json", "SUCCEEDED_2.json"}) ||
			!slices.Equal(keys("FAILED"), []string{"FAILED_1.json"}) || len(m.ResultFiles["PENDING"]) != 0 {
			t.Fatalf("manifest %+v", m)
		}
		gather, err := c.Job(ctx, sc.GatherJobID)
		if err != nil {
			t.Fatal(err)
		}
		var doc struct {
			ResultManifest string                     `json:"result_manifest"`
			BatchResults   map[string]json.RawMessage `json:"batch_results"`
		}
		if err := json.Unmarshal([]byte(gather.Result.Output), &doc); err != nil || doc.ResultManifest != sc.ResultManifest || len(doc.BatchResults) != 3 {
			t.Fatalf("the gather read %s (%v)", gather.Result.Output, err)
		}
		// Results too large to inline: the gather gets the manifest only.
		defer service.SetMaxInlineResults(10)()
		sc, err = c.StartScatter(ctx, client.ScatterParams{
			Job: client.SubmitParams{Script: countItems}, Batches: batches(3, 2), Results: "s3://" + b.name + "/out/", Gather: `cat > "$SPOOL_RESULT"`,
		})
		if err != nil {
			t.Fatal(err)
		}
		sc = follow(t, c, sc.ID)
		wantProgress(t, sc, spool.ScatterSucceeded, 3, 0, 0)
		if gather, err = c.Job(ctx, sc.GatherJobID); err != nil {
			t.Fatal(err)
		}
		doc.BatchResults = nil
		if err := json.Unmarshal([]byte(gather.Result.Output), &doc); err != nil || doc.ResultManifest != sc.ResultManifest || doc.BatchResults != nil ||
			!strings.Contains(string(gather.Result.Output), `"batch_results":null`) {
			t.Fatalf("the gather of large results read %s (%v)", gather.Result.Output, err)
		}
		// A bucket the server cannot reach is refused at once.
		_, err = c.StartScatter(ctx, client.ScatterParams{Job: client.SubmitParams{Script: "true"}, Batches: batches(1, 1), Results: "s3://no-such-bucket-spool/out/"})
		if !errors.Is(err, spool.ErrInvalidArgument) || !strings.Contains(err.Error(), `there is no bucket "no-such-bucket-spool"`) {
			t.Fatalf("results in a missing bucket: %v", err)
		}
	})
	t.Run("missing", func(t *testing.T) {
		for _, tc := range []struct{ src, want string }{
			{"s3://" + b.name + "/in/nothing.jsonl", "there is no object s3://" + b.name + "/in/nothing.jsonl"},
			{"s3://no-such-bucket-spool/items.jsonl", `there is no bucket "no-such-bucket-spool"`},
		} {
			sc, _ := run(t, spool.ScatterSource{Items: tc.src})
			if sc.State != spool.ScatterFailed || !strings.Contains(sc.Error, tc.want) {
				t.Fatalf("a scatter of %s ended %s: %q; want failed saying %q", tc.src, sc.State, sc.Error, tc.want)
			}
		}
	})
	t.Run("refused", func(t *testing.T) {
		for _, src := range []spool.ScatterSource{
			{Items: "s3://" + b.name + "/"},
			{Items: "s3://" + b.name + "/a.jsonl", ItemsPrefix: "s3://" + b.name + "/p/"},
			{Items: "s3://" + b.name + "/a.jsonl", Format: "xml"},
			{Items: "s3://" + b.name + "/a.jsonl", MaxItemsPerGroup: 2},
		} {
			if _, err := c.StartScatter(ctx, client.ScatterParams{Job: client.SubmitParams{Script: "true"}, Source: &src}); !errors.Is(err, spool.ErrInvalidArgument) {
				t.Errorf("a scatter of %+v: %v, want invalid", src, err)
			}
		}
	})
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestScatterItemsFromS3Memory: a server reads a 200,000-line item file
// from S3 with its heap growing by far less than the file's size: the
// items are streamed, never held whole.
func TestScatterItemsFromS3Memory(t *testing.T) {
	b := newS3Bucket(t)
	srv := b.s3Server(t)
	c := srv.Client()
	ctx := context.Background()
	const lines = 200_000
	var body strings.Builder
	for i := range lines {
		fmt.Fprintf(&body, `{"key":"photos/2026/11/img-%07d.png","size":%d,"tags":["a","b","c"],"pad":"%s"}`+"\n", i, 1000+i%5000, strings.Repeat("p", 120))
	}
	size := body.Len()
	url := b.put(t, "big/items.jsonl", body.String())
	body = strings.Builder{}

	// The heap grows by its garbage too, up to as much as is live
	// (GOGC=100), whatever the reading holds: collecting sooner leaves
	// mostly what is live to measure.
	defer debug.SetGCPercent(debug.SetGCPercent(10))
	runtime.GC()
	var before runtime.MemStats
	runtime.ReadMemStats(&before)
	var peak atomic.Uint64
	stop := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		var m runtime.MemStats
		for {
			runtime.ReadMemStats(&m)
			if m.HeapInuse > peak.Load() {
				peak.Store(m.HeapInuse)
			}
			select {
			case <-stop:
				return
			case <-time.After(2 * time.Millisecond):
			}
		}
	}()
	// No worker: the batches wait while the server reads.
	sc, err := c.StartScatter(ctx, client.ScatterParams{Job: client.SubmitParams{Script: "true"}, Source: &spool.ScatterSource{Items: url, MaxItemsPerBatch: 500}})
	if err != nil {
		t.Fatal(err)
	}
	sc = readAll(t, c, sc.ID)
	close(stop)
	<-sampled
	if sc.Reading.ItemsRead != lines || sc.Progress.BatchCount != lines/500 {
		t.Fatalf("read %+v into %d batches; want %d items in %d", sc.Reading, sc.Progress.BatchCount, lines, lines/500)
	}
	growth := int64(peak.Load()) - int64(before.HeapInuse)
	t.Logf("reading %d lines (%d MB) grew the heap by %.1f MB", lines, size>>20, float64(growth)/(1<<20))
	// The file is 40 MB: holding it, or its items, would pass this.
	if limit := int64(16 << 20); growth > limit {
		t.Fatalf("reading %d MB of items grew the heap by %d MB, more than %d MB", size>>20, growth>>20, limit>>20)
	}
}

// readAll waits until the server has read every item of a scatter.
func readAll(t *testing.T, c *client.Client, id string) *spool.Scatter {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	for {
		sc, err := c.Scatter(ctx, id)
		if err != nil {
			t.Fatalf("waiting for scatter %s to be read: %v", id, err)
		}
		if sc.Reading == nil || sc.Reading.Done || sc.State.IsFinal() {
			return sc
		}
		select {
		case <-ctx.Done():
			t.Fatalf("scatter %s is still being read: %+v", id, sc.Reading)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// TestScatterItemsFromS3OnEveryStore: every store records a scatter whose
// batch count grows as its items are read, and runs the batches (on AWS
// with the batches kept in an S3 bucket of blobs).
func TestScatterItemsFromS3OnEveryStore(t *testing.T) {
	b := newS3Bucket(t)
	var jsonl strings.Builder
	for i := range 23 {
		fmt.Fprintf(&jsonl, "{\"k\":%d}\n", i)
	}
	url := b.put(t, "in/items.jsonl", jsonl.String())
	onStores(t, func(testStore) bool { return true }, func(t *testing.T, set func(*server.Config)) {
		srv := newServer(t, func(c *server.Config) {
			set(c)
			c.Scatter.S3 = server.ScatterS3{Endpoint: b.moto.URL, PathStyle: true, Region: mototest.Region}
			if c.Store.Type == "aws" {
				c.Blobs = server.Blobs{Type: "s3", S3: server.BlobsS3{Bucket: b.name, Prefix: mototest.NewName("blobs") + "/", Endpoint: b.moto.URL, PathStyle: true, Region: mototest.Region}}
			}
		})
		spooltest.NewWorker(t, srv, worker.Config{Concurrency: 4})
		c := srv.Client()
		sc, err := c.StartScatter(context.Background(), client.ScatterParams{
			Job: client.SubmitParams{Script: countItems}, Source: &spool.ScatterSource{Items: url, MaxItemsPerBatch: 4}, MaxConcurrency: 2,
		})
		if err != nil {
			t.Fatal(err)
		}
		sc = follow(t, c, sc.ID)
		wantProgress(t, sc, spool.ScatterSucceeded, 6, 0, 0)
		if sc.Progress.ItemsDone != 23 || !sc.Reading.Done {
			t.Fatalf("progress %+v, reading %+v; want 23 items done", sc.Progress, sc.Reading)
		}
	})
}
