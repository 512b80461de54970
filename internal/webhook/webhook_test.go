package webhook

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	spoolv1 "github.com/spool-run/spool/gen/spool/v1"
	"github.com/spool-run/spool/internal/store"
	"github.com/spool-run/spool/internal/store/backends/memstore"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// receiver is a webhook receiver that answers with the statuses given,
// in turn (the last one after they run out), and keeps what it got.
type receiver struct {
	srv *httptest.Server

	mu       sync.Mutex
	statuses []int
	got      []received
}

type received struct {
	header http.Header
	body   []byte
}

func newReceiver(t *testing.T, statuses ...int) *receiver {
	t.Helper()
	rc := &receiver{statuses: statuses}
	rc.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		rc.mu.Lock()
		rc.got = append(rc.got, received{header: r.Header.Clone(), body: body})
		status := rc.statuses[0]
		if len(rc.statuses) > 1 {
			rc.statuses = rc.statuses[1:]
		}
		rc.mu.Unlock()
		w.WriteHeader(status)
	}))
	t.Cleanup(rc.srv.Close)
	return rc
}

func (rc *receiver) received() []received {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return append([]received(nil), rc.got...)
}

// clock is a time the test moves on.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

var secret = []byte("a secret of at least sixteen bytes")

// fixture is a store with a job that ended owing webhooks to urls, and
// senders over it on one clock.
type fixture struct {
	st    *memstore.Store
	clock *clock
	job   *spoolv1.Job
}

func newFixture(t *testing.T, urls ...string) *fixture {
	t.Helper()
	f := &fixture{st: memstore.New()}
	ctx := context.Background()
	j, _, err := f.st.Enqueue(ctx, store.NewJob{Queue: "deploys", Params: &spoolv1.JobParams{Argv: []string{"deploy"}}, MaxAttempts: 1, Notify: urls,
		Execution: &spoolv1.ExecutionConfig{Batching: &spoolv1.BatchingConfig{FlushIntervalSeconds: 1, MaxBatchSize: 50, MaxBatchBytes: 1 << 16}, HeartbeatIntervalSeconds: 30}})
	if err != nil {
		t.Fatal(err)
	}
	if f.job, err = f.st.Cancel(ctx, j.GetJobId(), "changed my mind"); err != nil {
		t.Fatal(err)
	}
	if f.job.GetNotifyDue() == nil {
		t.Fatal("a cancelled job with notify URLs owes no webhook")
	}
	// The store stamps the end with the real time; the clock starts after.
	f.clock = &clock{t: time.Now().Add(time.Second)}
	return f
}

func (f *fixture) sender(allowPrivate bool) *Sender {
	s := New(Options{Store: f.st, Secret: func(string) []byte { return secret }, BaseURL: "https://spool.example.com",
		Timeout: 5 * time.Second, AllowPrivate: allowPrivate})
	s.now = f.clock.now
	return s
}

func (f *fixture) deliveries(t *testing.T) []*spoolv1.Delivery {
	t.Helper()
	j, err := f.st.Get(context.Background(), f.job.GetJobId())
	if err != nil {
		t.Fatal(err)
	}
	return j.GetDeliveries()
}

func round(t *testing.T, s *Sender) int {
	t.Helper()
	n, err := s.Round(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// A receiver that fails once is tried again after the pause, with the
// same delivery id, a fresh signature it can check, and the job's end in
// the body; once it answered 2xx it is told nothing more.
func TestDeliverRetriesUntilDelivered(t *testing.T) {
	rc := newReceiver(t, http.StatusInternalServerError, http.StatusOK)
	f := newFixture(t, rc.srv.URL+"/hook")
	s := f.sender(true)

	if n := round(t, s); n != 1 {
		t.Fatalf("first round: %d POSTs, want 1", n)
	}
	ds := f.deliveries(t)
	if len(ds) != 1 || ds[0].GetDelivered() || ds[0].GetStatus() != 500 || !strings.Contains(ds[0].GetError(), "500") {
		t.Fatalf("after a 500: %v", ds)
	}
	if n := round(t, s); n != 0 {
		t.Errorf("a round before the pause ended made %d POSTs", n)
	}
	f.clock.add(pauses[0] + time.Second)
	if n := round(t, s); n != 1 {
		t.Fatalf("after the pause: %d POSTs, want 1", n)
	}
	ds = f.deliveries(t)
	if len(ds) != 2 || !ds[1].GetDelivered() || ds[1].GetTry() != 2 || ds[1].GetStatus() != 200 {
		t.Fatalf("after a 200: %v", ds)
	}
	if j, _ := f.st.Get(context.Background(), f.job.GetJobId()); j.GetNotifyDue() != nil {
		t.Errorf("a delivered webhook is still owed (notify_due %v)", j.GetNotifyDue().AsTime())
	}
	f.clock.add(2 * time.Hour)
	if n := round(t, s); n != 0 {
		t.Errorf("a round after delivery made %d POSTs", n)
	}

	got := rc.received()
	if len(got) != 2 {
		t.Fatalf("the receiver got %d POSTs, want 2", len(got))
	}
	for i, r := range got {
		h := r.header
		ts, err := strconv.ParseInt(h.Get("Spool-Timestamp"), 10, 64)
		if err != nil || h.Get("Spool-Signature") != Sign(secret, ts, r.body) {
			t.Errorf("POST %d: signature %q does not check with timestamp %q", i+1, h.Get("Spool-Signature"), h.Get("Spool-Timestamp"))
		}
		if h.Get("Spool-Delivery") != ds[0].GetDeliveryId() || h.Get("Spool-Event") != "job.cancelled" || h.Get("Content-Type") != "application/json" {
			t.Errorf("POST %d: headers %v", i+1, h)
		}
		var doc Document
		if err := json.Unmarshal(r.body, &doc); err != nil {
			t.Fatal(err)
		}
		if doc.JobID != f.job.GetJobId() || doc.Queue != "deploys" || doc.State != "cancelled" || doc.DeliveryID != ds[0].GetDeliveryId() ||
			doc.Links.Job != "https://spool.example.com/jobs/"+f.job.GetJobId() || doc.FinishedAt.IsZero() || doc.CreatedAt.IsZero() {
			t.Errorf("POST %d: document %+v", i+1, doc)
		}
	}
	if got[0].header.Get("Spool-Timestamp") == got[1].header.Get("Spool-Timestamp") {
		t.Error("the retry was signed with the first try's timestamp")
	}
}

// Two servers' senders claiming the same job at once send it once.
func TestConcurrentSendersSendOnce(t *testing.T) {
	rc := newReceiver(t, http.StatusOK)
	f := newFixture(t, rc.srv.URL+"/a", rc.srv.URL+"/b")
	senders := []*Sender{f.sender(true), f.sender(true), f.sender(true)}
	var wg sync.WaitGroup
	for _, s := range senders {
		wg.Go(func() { round(t, s) })
	}
	wg.Wait()
	f.clock.add(10 * time.Minute) // past the claim's hold
	for _, s := range senders {
		round(t, s)
	}
	if got := rc.received(); len(got) != 2 {
		t.Errorf("the receiver got %d POSTs for one end of a job with two URLs, want 2", len(got))
	}
	if ds := f.deliveries(t); len(ds) != 2 || !ds[0].GetDelivered() || !ds[1].GetDelivered() || ds[0].GetDeliveryId() == ds[1].GetDeliveryId() {
		t.Errorf("deliveries: %v; want one delivered to each URL, with ids of their own", ds)
	}
}

// A receiver that never answers 2xx is tried with growing pauses until a
// day after the job ended, then given up.
func TestDeliverGivesUpAfterADay(t *testing.T) {
	rc := newReceiver(t, http.StatusBadGateway)
	f := newFixture(t, rc.srv.URL)
	s := f.sender(true)
	end := f.job.GetResult().GetFinishedAt().AsTime()
	for f.clock.now().Before(end.Add(GiveUpAfter + time.Hour)) {
		round(t, s)
		f.clock.add(10 * time.Minute)
	}
	ds := f.deliveries(t)
	last := ds[len(ds)-1]
	if !last.GetGivenUp() || len(ds) > maxTries || len(rc.received()) != len(ds) {
		t.Errorf("%d tries (the receiver saw %d), the last given up: %v; want given up within %d", len(ds), len(rc.received()), last.GetGivenUp(), maxTries)
	}
	for i := 1; i < len(ds); i++ {
		if gap := ds[i].GetAt().AsTime().Sub(ds[i-1].GetAt().AsTime()); gap < pauses[min(i-1, len(pauses)-1)] {
			t.Errorf("try %d came %v after the one before, within its pause", i+1, gap)
		}
	}
	if j, _ := f.st.Get(context.Background(), f.job.GetJobId()); j.GetNotifyDue() != nil {
		t.Error("a given-up webhook is still owed")
	}
}

// Without allow_private_addresses, a webhook to loopback is refused at
// the connection, and so is one to a name that resolves there.
func TestPrivateAddressesRefused(t *testing.T) {
	rc := newReceiver(t, http.StatusOK)
	u := strings.Replace(rc.srv.URL, "127.0.0.1", "localhost", 1)
	f := newFixture(t, rc.srv.URL, u)
	round(t, f.sender(false))
	if n := len(rc.received()); n != 0 {
		t.Fatalf("the loopback receiver got %d POSTs", n)
	}
	for _, d := range f.deliveries(t) {
		if d.GetDelivered() || !strings.Contains(d.GetError(), "allow_private_addresses") {
			t.Errorf("delivery to %s: %v", d.GetUrl(), d)
		}
	}
	for addr, public := range map[string]bool{"169.254.169.254": false, "10.1.2.3": false, "::1": false, "100.64.0.1": false,
		"::ffff:127.0.0.1": false, "fd00::1": false, "0.0.0.0": false, "64:ff9b::a9fe:a9fe": false, "64:ff9b::808:808": true, "8.8.8.8": true, "2606:4700::1111": true} {
		if got := Public(netip.MustParseAddr(addr)); got != public {
			t.Errorf("Public(%s) = %v, want %v", addr, got, public)
		}
	}
}
