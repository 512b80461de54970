package storemetrics_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/spool-run/spool"
	spoolv1 "github.com/spool-run/spool/gen/spool/v1"
	"github.com/spool-run/spool/internal/apierr"
	"github.com/spool-run/spool/internal/store"
	"github.com/spool-run/spool/internal/store/backends/memstore"
	"github.com/spool-run/spool/internal/store/backends/sqlitestore"
	"github.com/spool-run/spool/internal/store/storemetrics"
	"github.com/spool-run/spool/internal/telemetry"
)

// scrape is what /metrics shows of m.
func scrape(t *testing.T, m *telemetry.Metrics) string {
	t.Helper()
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	return rec.Body.String()
}

// series returns the value of the series written exactly as want (name
// and labels in the exporter's order), failing when it is absent.
func series(t *testing.T, text, want string) string {
	t.Helper()
	for line := range strings.Lines(text) {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), want+" "); ok {
			return v
		}
	}
	t.Fatalf("no series %s in the scrape:\n%s", want, text)
	return ""
}

// TestCallsErrorsAndKinds: every call is one observation of its operation
// in the duration histogram, and a failed call is one error of its kind,
// on the series the Prometheus exporter names.
func TestCallsErrorsAndKinds(t *testing.T) {
	m := telemetry.Must(telemetry.New())
	st := storemetrics.Wrap(memstore.New(), "memory", m.Meter("test"))
	defer st.Close()
	ctx := context.Background()

	for range 3 {
		if _, err := st.QueuePaused(ctx, "q"); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := st.Get(ctx, "no-such-job"); !errors.Is(err, spool.ErrNotFound) {
		t.Fatalf("Get of an unknown job: %v", err)
	}
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := st.Dequeue(cancelled, store.DequeueRequest{Queue: "q", Max: 1, LeaseDuration: time.Minute, Wait: time.Second}); err == nil {
		t.Fatal("a cancelled dequeue returned no error")
	}

	got := scrape(t, m)
	for want, value := range map[string]string{
		`spool_store_duration_seconds_count{operation="queue_paused",store="memory"}`:  "3",
		`spool_store_duration_seconds_count{operation="get",store="memory"}`:           "1",
		`spool_store_errors_total{kind="not_found",operation="get",store="memory"}`:    "1",
		`spool_store_errors_total{kind="canceled",operation="dequeue",store="memory"}`: "1",
	} {
		if v := series(t, got, want); v != value {
			t.Errorf("%s = %s, want %s", want, v, value)
		}
	}
	// No error series of any kind for the operation that succeeded (its
	// histogram's buckets do carry counts of 1 and more).
	if regexp.MustCompile(`spool_store_errors_total\{kind="[a-z_]+",operation="queue_paused"`).MatchString(got) {
		t.Errorf("calls that succeeded were counted as errors:\n%s", got)
	}
}

// TestReadIsMeasuredOnce: a read that yields as it goes is one call, and
// the time its caller spends with the items is not the store's.
func TestReadIsMeasuredOnce(t *testing.T) {
	m := telemetry.Must(telemetry.New())
	st := storemetrics.Wrap(memstore.New(), "memory", m.Meter("test"))
	defer st.Close()
	ctx := context.Background()
	for _, err := range st.ReadStored(ctx, store.ReadRequest{JobID: "no-such-job", FromSequence: 1}) {
		_ = err
		time.Sleep(50 * time.Millisecond) // the caller's own work, not the store's
	}
	got := scrape(t, m)
	if v := series(t, got, `spool_store_duration_seconds_count{operation="read_stored",store="memory"}`); v != "1" {
		t.Errorf("read_stored count = %s, want 1", v)
	}
	if v := series(t, got, `spool_store_duration_seconds_bucket{operation="read_stored",store="memory",le="0.025"}`); v != "1" {
		t.Errorf("the read took over 25 ms by the histogram (bucket le=0.025 holds %s): the caller's time was counted as the store's", v)
	}
}

// TestCapabilitiesKept: what the backend offers, the wrapper offers,
// measured; what it lacks, the wrapper lacks, since the core chooses its
// way by their presence.
func TestCapabilitiesKept(t *testing.T) {
	ctx := context.Background()
	m := telemetry.Must(telemetry.New())
	sq, err := sqlitestore.Open(ctx, filepath.Join(t.TempDir(), "spool.db"), sqlitestore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, inner := range []store.JobStore{memstore.New(), sq, &reporting{Store: memstore.New()}} {
		st := storemetrics.Wrap(inner, "test", m.Meter("test"))
		want, got := inner.Capabilities().Missing(), st.Capabilities().Missing()
		if fmt.Sprint(want) != fmt.Sprint(got) {
			t.Errorf("%T: the wrapper lacks %v, the store %v", inner, got, want)
		}
		if st.Unwrap() != inner {
			t.Errorf("%T: Unwrap returned another store", inner)
		}
		if err := st.Close(); err != nil {
			t.Fatal(err)
		}
	}

	// SQLite's capabilities, called through the wrapper, reach the store
	// and are counted.
	sq, err = sqlitestore.Open(ctx, filepath.Join(t.TempDir(), "spool.db"), sqlitestore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	st := storemetrics.Wrap(sq, "sqlite", m.Meter("test"))
	defer st.Close()
	caps := st.Capabilities()
	if err := caps.Pinger.Ping(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := caps.LeaseGracer.GraceLeases(ctx, time.Now()); err != nil {
		t.Fatal(err)
	}
	if err := caps.SpaceReclaimer.ReclaimSpace(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := caps.Finisher.Finish(ctx, store.LeaseRef{JobID: "no-such-job", Queue: "q", Attempt: 1, LeaseID: "x"}, nil, &spoolv1.JobResult{}); err == nil {
		t.Fatal("finishing an unknown job's lease succeeded")
	}
	got := scrape(t, m)
	for _, op := range []string{"ping", "grace_leases", "reclaim_space", "finish"} {
		if v := series(t, got, `spool_store_duration_seconds_count{operation="`+op+`",store="sqlite"}`); v != "1" {
			t.Errorf("%s count = %s, want 1", op, v)
		}
	}
}

// reporting is a store that reports retries and throttles, as PostgreSQL
// and AWS do, and leases through PausedLeaser.
type reporting struct {
	*memstore.Store
	o store.RetryObserver
}

func (r *reporting) Capabilities() store.Capabilities {
	c := r.Store.Capabilities()
	c.RetryReporter, c.PausedLeaser = r, r
	return c
}

func (r *reporting) ReportRetries(o store.RetryObserver) { r.o = o }

func (r *reporting) DequeueUnpaused(ctx context.Context, req store.DequeueRequest) ([]store.Lease, error) {
	r.o.Throttled("SQS.ReceiveMessage")
	r.o.Retried("SQS.ReceiveMessage", "throttled")
	r.o.Retried("transaction", "serialization")
	return nil, apierr.Errorf(spool.ErrThrottled, "slow down")
}

// TestRetriesAndThrottles: what a backend reports reaches the counters,
// by its request and reason, and a capability's failure is counted under
// its own operation.
func TestRetriesAndThrottles(t *testing.T) {
	m := telemetry.Must(telemetry.New())
	st := storemetrics.Wrap(&reporting{Store: memstore.New()}, "aws", m.Meter("test"))
	defer st.Close()
	if _, err := st.Capabilities().PausedLeaser.DequeueUnpaused(context.Background(), store.DequeueRequest{Queue: "q"}); !errors.Is(err, spool.ErrThrottled) {
		t.Fatalf("DequeueUnpaused: %v", err)
	}
	got := scrape(t, m)
	for want, value := range map[string]string{
		`spool_store_throttles_total{operation="SQS.ReceiveMessage",store="aws"}`:                  "1",
		`spool_store_retries_total{operation="SQS.ReceiveMessage",reason="throttled",store="aws"}`: "1",
		`spool_store_retries_total{operation="transaction",reason="serialization",store="aws"}`:    "1",
		`spool_store_errors_total{kind="throttled",operation="dequeue_unpaused",store="aws"}`:      "1",
		`spool_store_duration_seconds_count{operation="dequeue_unpaused",store="aws"}`:             "1",
	} {
		if v := series(t, got, want); v != value {
			t.Errorf("%s = %s, want %s", want, v, value)
		}
	}
}
