package service

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/spool-run/spool"
	spoolv1 "github.com/spool-run/spool/gen/spool/v1"
	"github.com/spool-run/spool/internal/config"
	"github.com/spool-run/spool/internal/safebuf"
	"github.com/spool-run/spool/internal/store"
	"github.com/spool-run/spool/internal/store/backends/memstore"
	"github.com/spool-run/spool/internal/token"
)

// batchCore is a core with auth on over an in-memory store, its log and
// its meters' reader.
type batchCore struct {
	s      *Service
	st     *memstore.Store
	log    *safebuf.Buffer
	reader *sdkmetric.ManualReader
}

func newBatchCore(t *testing.T) *batchCore {
	t.Helper()
	signer, err := token.NewSigner(make([]byte, 32))
	if err != nil {
		t.Fatal(err)
	}
	b := &batchCore{st: memstore.New(), log: &safebuf.Buffer{}, reader: sdkmetric.NewManualReader()}
	meters := sdkmetric.NewMeterProvider(sdkmetric.WithReader(b.reader))
	t.Cleanup(func() { _ = meters.Shutdown(context.Background()) })
	b.s = New(Options{Store: b.st, Config: config.Default(), Signer: signer, Meter: meters.Meter("spool"),
		Log: slog.New(slog.NewJSONHandler(b.log, nil))})
	return b
}

// key stores a key of role limited to queues and returns the context of
// a request that presents it.
func (b *batchCore) key(t *testing.T, name string, role spoolv1.KeyRole, queues ...string) context.Context {
	t.Helper()
	secret := NewSecret()
	k := &spoolv1.Key{Name: name, Role: role, Queues: queues, CreatedAt: timestamppb.Now()}
	if err := b.st.CreateKey(context.Background(), store.KeyRecord{Key: k, Hash: HashKey(secret)}); err != nil {
		t.Fatal(err)
	}
	return WithCredentials(context.Background(), Credentials{Host: "localhost", Key: secret})
}

// counted is what a counter of the core's meters holds, by queue.
func (b *batchCore) counted(t *testing.T, name string) map[string]int64 {
	t.Helper()
	var rm metricdata.ResourceMetrics
	if err := b.reader.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	out := map[string]int64{}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			sum, ok := m.Data.(metricdata.Sum[int64])
			if m.Name != name || !ok {
				continue
			}
			for _, p := range sum.DataPoints {
				q, _ := p.Attributes.Value("queue")
				out[q.AsString()] += p.Value
			}
		}
	}
	return out
}

// logged counts the log's records by message.
func (b *batchCore) logged(t *testing.T) map[string]int {
	t.Helper()
	out := map[string]int{}
	for line := range strings.Lines(b.log.String()) {
		var rec struct{ Msg string }
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatalf("log line %q: %v", line, err)
		}
		out[rec.Msg]++
	}
	return out
}

func job(queue, requestID string, argv ...string) *spoolv1.EnqueueJobRequest {
	return &spoolv1.EnqueueJobRequest{Queue: queue, RequestId: requestID, Params: &spoolv1.JobParams{Argv: argv}}
}

// TestEnqueueJobsCountsAndLogsOncePerCall: a batch adds to the same
// counters as single enqueues, by queue, and logs one line, not one per
// job.
func TestEnqueueJobsCountsAndLogsOncePerCall(t *testing.T) {
	b := newBatchCore(t)
	ctx := b.key(t, "submitter", spoolv1.KeyRole_KEY_ROLE_SUBMIT)
	req := &spoolv1.EnqueueJobsRequest{}
	for i := range 300 {
		req.Jobs = append(req.Jobs, job([]string{"a", "b", "c"}[i%3], fmt.Sprint("r", i), "echo", fmt.Sprint(i)))
	}
	req.Jobs = append(req.Jobs, &spoolv1.EnqueueJobRequest{Queue: "a", RejectReason: "not a job spec"}, job("a", "bad"))
	resp, err := b.s.EnqueueJobs(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range resp.GetResults()[:300] {
		if r.GetErrorCode() != "" || r.GetJob().GetParams().GetArgv()[1] != fmt.Sprint(i) || r.GetDeduplicated() {
			t.Fatalf("job %d: %v", i, r)
		}
	}
	if r := resp.GetResults()[300]; r.GetJob().GetState() != spoolv1.JobState_JOB_STATE_FAILED {
		t.Errorf("the rejected job: %v, want recorded as failed", r)
	}
	if r := resp.GetResults()[301]; r.GetErrorCode() != "invalid_argument" || r.GetJob() != nil {
		t.Errorf("a job with nothing to run: %v, want invalid_argument", r)
	}
	// Repeats are counted nowhere.
	if _, err := b.s.EnqueueJobs(ctx, &spoolv1.EnqueueJobsRequest{Jobs: req.Jobs[:300]}); err != nil {
		t.Fatal(err)
	}
	if got := b.counted(t, "spool.jobs.enqueued"); got["a"] != 100 || got["b"] != 100 || got["c"] != 100 {
		t.Errorf("spool.jobs.enqueued by queue: %v, want 100 each of a, b and c", got)
	}
	if got := b.counted(t, "spool.jobs.rejected"); got["a"] != 1 {
		t.Errorf("spool.jobs.rejected by queue: %v, want 1 in a", got)
	}
	if got := b.logged(t); got["jobs enqueued"] != 2 || got["job enqueued"] != 0 {
		t.Errorf("two calls of 302 and 300 jobs logged %v, want a line each", got)
	}
	if !strings.Contains(b.log.String(), `"created":300,"rejected":1,"deduplicated":0,"failed":1`) ||
		!strings.Contains(b.log.String(), `"created":0,"rejected":0,"deduplicated":300,"failed":0`) {
		t.Errorf("the calls' lines do not count their jobs:\n%s", b.log.String())
	}
}

// TestEnqueueJobsRights: the key is checked once for the call, and a key
// limited to some queues is refused the jobs of the others, each on its
// own. (The API makes only worker keys limited to queues, and they may not
// submit; the rule holds for whatever key has both.)
func TestEnqueueJobsRights(t *testing.T) {
	b := newBatchCore(t)
	limited := b.key(t, "builds-only", spoolv1.KeyRole_KEY_ROLE_SUBMIT, "builds")
	resp, err := b.s.EnqueueJobs(limited, &spoolv1.EnqueueJobsRequest{Jobs: []*spoolv1.EnqueueJobRequest{
		job("builds", "", "make"), job("deploys", "", "make"), job("", "", "make"), job("builds", "", "make", "test"),
	}})
	if err != nil {
		t.Fatal(err)
	}
	rs := resp.GetResults()
	for _, i := range []int{0, 3} {
		if rs[i].GetErrorCode() != "" || rs[i].GetJob().GetQueue() != "builds" {
			t.Errorf("job %d, in builds: %v", i, rs[i])
		}
	}
	for _, i := range []int{1, 2} {
		if rs[i].GetErrorCode() != "permission_denied" || !strings.Contains(rs[i].GetErrorMessage(), "builds-only") {
			t.Errorf("job %d, in another queue: %v, want permission_denied", i, rs[i])
		}
	}

	for name, ctx := range map[string]context.Context{
		"a read key":   b.key(t, "reader", spoolv1.KeyRole_KEY_ROLE_READ),
		"a worker key": b.key(t, "worker", spoolv1.KeyRole_KEY_ROLE_WORKER),
	} {
		if _, err := b.s.EnqueueJobs(ctx, &spoolv1.EnqueueJobsRequest{Jobs: []*spoolv1.EnqueueJobRequest{job("", "", "true")}}); !errors.Is(err, spool.ErrPermissionDenied) {
			t.Errorf("%s: %v, want the call refused", name, err)
		}
	}
	anon := WithCredentials(context.Background(), Credentials{Host: "localhost"})
	if _, err := b.s.EnqueueJobs(anon, &spoolv1.EnqueueJobsRequest{}); !errors.Is(err, spool.ErrUnauthenticated) {
		t.Errorf("no key: %v, want unauthenticated", err)
	}

	admin := b.key(t, "admin", spoolv1.KeyRole_KEY_ROLE_ADMIN)
	for name, jobs := range map[string][]*spoolv1.EnqueueJobRequest{
		"no jobs":  nil,
		"too many": make([]*spoolv1.EnqueueJobRequest, MaxEnqueueJobs+1),
	} {
		_, err := b.s.EnqueueJobs(admin, &spoolv1.EnqueueJobsRequest{Jobs: jobs})
		if !errors.Is(err, spool.ErrInvalidArgument) || !strings.Contains(err.Error(), "send 1 to 1000") {
			t.Errorf("%s: %v, want refused with the bound", name, err)
		}
	}
}
