// Package webhook tells URLs of jobs' ends: for each job whose end is
// owed a webhook (the store's outbox, store.NotifyStore), it POSTs a JSON
// document, signed with HMAC-SHA256, to each of the job's notify URLs
// that has not answered yet, records every try on the job, and tries
// again with growing pauses until a day after the job ended.
//
// The headers, as GitHub's and Stripe's webhooks have them:
//
//	Spool-Event:     job.succeeded, job.failed or job.cancelled
//	Spool-Delivery:  the delivery's id: the same on every try of one URL
//	                 for one end, so a receiver drops a repeat by it
//	Spool-Timestamp: the Unix time of the try
//	Spool-Signature: sha256=<hex HMAC-SHA256 of "<timestamp>.<body">,
//	                 keyed with the queue's notify_secret or the server's
//	                 notify.secret (absent when neither is set)
//
// A receiver checks the signature and that the timestamp is recent (a
// few minutes), which keeps an old delivery from being replayed to it.
//
// Deliveries are at least once: a server that dies between a receiver's
// answer and recording it leaves the try to be made again, with the same
// Spool-Delivery, by a server claiming the job after the hold.
//
// Where webhooks may go: whoever may submit a job names its URL, and a
// server often sits where it reaches what the submitter cannot (a cloud's
// metadata service at 169.254.169.254, an admin port on localhost, the
// private network). So unless notify.allow_private_addresses is set, the
// connection itself refuses loopback, private, link-local, unspecified
// and multicast addresses, checked on the address dialled (after DNS, so
// a name that resolves to such an address is refused too); proxies from
// the environment are not used, and redirects are not followed (a 3xx is
// a failed try).
package webhook

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/metric/noop"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	spoolv1 "github.com/spool-run/spool/gen/spool/v1"
	"github.com/spool-run/spool/internal/convert"
	"github.com/spool-run/spool/internal/store"
	"github.com/spool-run/spool/internal/store/storekit"
	"github.com/spool-run/spool/internal/telemetry"
)

// Outbox is the store as the sender uses it.
type Outbox interface {
	ClaimNotifications(ctx context.Context, now time.Time, hold time.Duration, max int) ([]*spoolv1.Job, error)
	RecordDeliveries(ctx context.Context, jobID string, ds []*spoolv1.Delivery, next time.Time) error
}

// Options are what a Sender is built from.
type Options struct {
	Store Outbox
	// Secret returns the key that signs the webhooks of queue's jobs
	// (nil: unsigned).
	Secret func(queue string) []byte
	// BaseURL is where people reach the server (https://spool.example.com):
	// the document links to the job's page and log under it.
	BaseURL string
	// Timeout bounds one POST (0: 10 seconds).
	Timeout time.Duration
	// AllowPrivate lets webhooks reach loopback and private addresses.
	AllowPrivate bool
	Log          *slog.Logger
	Meter        metric.Meter
}

// Sender delivers the webhooks owed. Its methods are safe for concurrent
// use; every server runs one (maintenance.Notifier), and the store's
// claims keep two from delivering one job's end at once.
type Sender struct {
	o      Options
	client *http.Client
	hold   time.Duration
	now    func() time.Time
	// unsigned logs the first webhook sent without a signature.
	unsigned sync.Once

	tries    metric.Int64Counter
	took     metric.Float64Histogram
	outcomes struct{ delivered, failed, givenUp metric.MeasurementOption }
}

// claimBatch is how many jobs one round claims.
const claimBatch = 100

// parallel is how many jobs' webhooks one round sends at once.
const parallel = 16

// New returns a sender over o.Store.
func New(o Options) *Sender {
	if o.Timeout <= 0 {
		o.Timeout = 10 * time.Second
	}
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	if o.Meter == nil {
		o.Meter = noop.NewMeterProvider().Meter("spool")
	}
	if o.Secret == nil {
		o.Secret = func(string) []byte { return nil }
	}
	s := &Sender{o: o, client: newClient(o.Timeout, o.AllowPrivate), now: storekit.Now,
		// A claim outlasts a round of one job's URLs, each taking up to
		// the timeout, so no other server starts on the job meanwhile.
		hold: time.Minute + store.MaxNotify*o.Timeout}
	s.tries = telemetry.Must(o.Meter.Int64Counter("spool.webhooks.tries",
		metric.WithDescription("Webhook POSTs made, by outcome: delivered (2xx), failed (retried later) or given_up (the last try failed).")))
	s.took = telemetry.Must(o.Meter.Float64Histogram("spool.webhooks.duration", metric.WithUnit("s"),
		metric.WithDescription("How long webhook receivers took to answer.")))
	s.outcomes.delivered = metric.WithAttributes(attribute.String("outcome", "delivered"))
	s.outcomes.failed = metric.WithAttributes(attribute.String("outcome", "failed"))
	s.outcomes.givenUp = metric.WithAttributes(attribute.String("outcome", "given_up"))
	return s
}

// Round claims the jobs whose webhooks are due, sends them and records
// the tries; it returns how many POSTs it made.
func (s *Sender) Round(ctx context.Context) (int, error) {
	jobs, err := s.o.Store.ClaimNotifications(ctx, s.now(), s.hold, claimBatch)
	if err != nil || len(jobs) == 0 {
		return 0, err
	}
	var (
		mu    sync.Mutex
		sent  int
		errs  []error
		wg    sync.WaitGroup
		slots = make(chan struct{}, parallel)
	)
	for _, j := range jobs {
		slots <- struct{}{}
		wg.Go(func() {
			defer func() { <-slots }()
			n, err := s.deliver(ctx, j)
			mu.Lock()
			defer mu.Unlock()
			sent += n
			if err != nil {
				errs = append(errs, fmt.Errorf("job %s: %w", j.GetJobId(), err))
			}
		})
	}
	wg.Wait()
	return sent, errors.Join(errs...)
}

// deliver tries each of j's URLs that is due and records the tries.
func (s *Sender) deliver(ctx context.Context, j *spoolv1.Job) (int, error) {
	ended := endOf(j)
	var (
		tried []*spoolv1.Delivery
		next  time.Time
	)
	for _, u := range j.GetNotify() {
		st := stateOf(j, u)
		if st.done {
			continue
		}
		now := s.now()
		if st.tries > 0 {
			if due := st.last.Add(backoff(st.tries)); due.After(now) {
				next = earliest(next, due)
				continue
			}
		}
		d := s.post(ctx, j, u, deliveryID(j, ended, u), st.tries+1)
		if !d.GetDelivered() {
			due := d.GetAt().AsTime().Add(backoff(d.GetTry()))
			if d.GetTry() >= maxTries || due.After(ended.Add(GiveUpAfter)) {
				d.GivenUp = true
			} else {
				next = earliest(next, due)
			}
		}
		tried = append(tried, d)
		s.count(ctx, d)
	}
	if err := s.o.Store.RecordDeliveries(context.WithoutCancel(ctx), j.GetJobId(), tried, next); err != nil {
		return len(tried), err
	}
	return len(tried), nil
}

func (s *Sender) count(ctx context.Context, d *spoolv1.Delivery) {
	outcome := s.outcomes.failed
	switch {
	case d.GetDelivered():
		outcome = s.outcomes.delivered
	case d.GetGivenUp():
		outcome = s.outcomes.givenUp
		s.o.Log.Warn("gave up on a webhook: it failed for a day", "url", redact(d.GetUrl()), "delivery_id", d.GetDeliveryId(), "error", d.GetError())
	}
	s.tries.Add(ctx, 1, outcome)
	if d.GetStatus() != 0 {
		s.took.Record(ctx, d.GetTook().AsDuration().Seconds())
	}
}

// GiveUpAfter is how long after a job's end its webhooks are tried.
const GiveUpAfter = 24 * time.Hour

// pauses are the waits after each failed try of one URL: growing fast at
// first and reaching hours, so that a receiver down for a day is still
// told, in few enough tries that a job's deliveries, kept to the newest
// store.MaxDeliveries, hold every URL's latest.
var pauses = []time.Duration{10 * time.Second, time.Minute, 5 * time.Minute, 15 * time.Minute, 30 * time.Minute,
	time.Hour, 2 * time.Hour, 4 * time.Hour, 8 * time.Hour}

// maxTries is the most tries of one URL for one end.
const maxTries = store.MaxDeliveries / store.MaxNotify

// backoff is the pause after the try-th failed try.
func backoff(try int32) time.Duration {
	i := min(int(try), len(pauses)) - 1
	return pauses[max(i, 0)]
}

func earliest(a, b time.Time) time.Time {
	if a.IsZero() || b.Before(a) {
		return b
	}
	return a
}

// urlState is what a job's deliveries say of one URL.
type urlState struct {
	done  bool // delivered or given up
	tries int32
	last  time.Time
}

func stateOf(j *spoolv1.Job, u string) urlState {
	var st urlState
	for _, d := range j.GetDeliveries() {
		if d.GetUrl() != u {
			continue
		}
		st.done = st.done || d.GetDelivered() || d.GetGivenUp()
		if d.GetTry() > st.tries {
			st.tries, st.last = d.GetTry(), d.GetAt().AsTime()
		}
	}
	return st
}

// endOf is when j ended.
func endOf(j *spoolv1.Job) time.Time {
	if t := j.GetResult().GetFinishedAt(); t != nil {
		return t.AsTime()
	}
	return j.GetUpdatedAt().AsTime()
}

// deliveryID names the delivery of j's end to u: derived, not drawn, so
// every try and every server names it alike.
func deliveryID(j *spoolv1.Job, ended time.Time, u string) string {
	h := sha256.Sum256([]byte(j.GetJobId() + "\x00" + ended.UTC().Format(time.RFC3339Nano) + "\x00" + u))
	return hex.EncodeToString(h[:16])
}

// Document is the JSON body a webhook POSTs.
type Document struct {
	DeliveryID string    `json:"delivery_id"`
	Event      string    `json:"event"`
	JobID      string    `json:"job_id"`
	Queue      string    `json:"queue"`
	State      string    `json:"state"`
	ExitCode   int32     `json:"exit_code"`
	Error      string    `json:"error,omitempty"`
	Attempt    int32     `json:"attempt"`
	Schedule   string    `json:"schedule,omitempty"`
	CreatedAt  time.Time `json:"created_at"`
	StartedAt  time.Time `json:"started_at,omitzero"`
	FinishedAt time.Time `json:"finished_at"`
	Links      Links     `json:"links"`
}

// Links are where a person or program reads more of the job.
type Links struct {
	Job string `json:"job"`
	Log string `json:"log"`
	API string `json:"api"`
}

// document is j's end as a webhook's body.
func (s *Sender) document(j *spoolv1.Job, id string) ([]byte, string) {
	state := strings.ToLower(convert.State(j.GetState()).String())
	base := strings.TrimSuffix(s.o.BaseURL, "/")
	jid := url.PathEscape(j.GetJobId())
	d := Document{DeliveryID: id, Event: "job." + state, JobID: j.GetJobId(), Queue: j.GetQueue(), State: state,
		ExitCode: j.GetResult().GetExitCode(), Error: j.GetResult().GetError(), Attempt: j.GetAttempt(), Schedule: j.GetSchedule(),
		CreatedAt: j.GetCreatedAt().AsTime(), FinishedAt: endOf(j),
		Links: Links{Job: base + "/jobs/" + jid, Log: base + "/api/v1/jobs/" + jid + "/logs/raw", API: base + "/api/v1/jobs/" + jid}}
	if t := j.GetResult().GetStartedAt(); t != nil {
		d.StartedAt = t.AsTime()
	} else if t := j.GetStartedAt(); t != nil {
		d.StartedAt = t.AsTime()
	}
	body, _ := json.Marshal(d) // plain fields: cannot fail
	return body, d.Event
}

// Sign is the Spool-Signature of body sent at ts with secret.
func Sign(secret []byte, ts int64, body []byte) string {
	m := hmac.New(sha256.New, secret)
	fmt.Fprintf(m, "%d.", ts)
	m.Write(body)
	return "sha256=" + hex.EncodeToString(m.Sum(nil))
}

// post makes one try of u and says how it went.
func (s *Sender) post(ctx context.Context, j *spoolv1.Job, u, id string, try int32) *spoolv1.Delivery {
	at := s.now()
	d := &spoolv1.Delivery{DeliveryId: id, Url: u, Try: try, At: timestamppb.New(at)}
	if err := CheckURL(u); err != nil {
		// Checked at submit; a URL refused since (a stricter check) is
		// not tried again.
		d.Error, d.GivenUp = err.Error(), true
		return d
	}
	body, event := s.document(j, id)
	ctx, cancel := context.WithTimeout(ctx, s.o.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u, bytes.NewReader(body))
	if err != nil {
		d.Error, d.GivenUp = err.Error(), true
		return d
	}
	ts := at.Unix()
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "spool-webhook/1")
	req.Header.Set("Spool-Event", event)
	req.Header.Set("Spool-Delivery", id)
	req.Header.Set("Spool-Timestamp", strconv.FormatInt(ts, 10))
	if secret := s.o.Secret(j.GetQueue()); len(secret) > 0 {
		req.Header.Set("Spool-Signature", Sign(secret, ts, body))
	} else {
		s.unsigned.Do(func() {
			s.o.Log.Warn("sending webhooks unsigned: receivers cannot tell them from forgeries; set notify.secret (or queues.NAME.notify_secret)", "queue", j.GetQueue())
		})
	}
	start := time.Now()
	resp, err := s.client.Do(req)
	d.Took = durationpb.New(time.Since(start))
	if err != nil {
		d.Error = describe(err)
		return d
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	_ = resp.Body.Close()
	d.Status = int32(resp.StatusCode)
	if resp.StatusCode/100 == 2 {
		d.Delivered = true
	} else {
		d.Error = fmt.Sprintf("answered %s; only 2xx counts as delivered", resp.Status)
	}
	return d
}

// describe is a failed POST's error as a job shows it.
func describe(err error) string {
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return "no answer within the timeout (notify.timeout_seconds)"
	}
	return err.Error()
}

// redact drops a URL's query, which may hold a token, from the log.
func redact(u string) string {
	if i := strings.IndexAny(u, "?"); i >= 0 {
		return u[:i] + "?…"
	}
	return u
}

// errPrivate refuses a connection to an address webhooks may not reach.
var errPrivate = errors.New("refused: the address is loopback, private or link-local (notify.allow_private_addresses allows it)")

// newClient is the HTTP client webhooks go out through.
func newClient(timeout time.Duration, allowPrivate bool) *http.Client {
	dialer := &net.Dialer{Timeout: timeout}
	if !allowPrivate {
		dialer.Control = func(_, address string, _ syscall.RawConn) error {
			ap, err := netip.ParseAddrPort(address)
			if err != nil {
				return fmt.Errorf("dialling %s: %w", address, err)
			}
			if !Public(ap.Addr()) {
				return fmt.Errorf("%s: %w", ap.Addr(), errPrivate)
			}
			return nil
		}
	}
	tr := &http.Transport{
		// No proxy: the address check is on what the server dials, and a
		// proxy would dial for it.
		Proxy:                 nil,
		DialContext:           dialer.DialContext,
		TLSHandshakeTimeout:   timeout,
		ResponseHeaderTimeout: timeout,
		MaxIdleConnsPerHost:   4,
		IdleConnTimeout:       time.Minute,
	}
	return &http.Client{Transport: tr, Timeout: timeout,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}

// Public reports whether a webhook may reach addr without
// notify.allow_private_addresses.
func Public(addr netip.Addr) bool {
	addr = addr.Unmap()
	if nat64.Contains(addr) {
		// An IPv4 address reached through a NAT64 gateway is judged as
		// that address.
		b := addr.As16()
		addr = netip.AddrFrom4([4]byte(b[12:]))
	}
	if addr.IsLoopback() || addr.IsPrivate() || addr.IsLinkLocalUnicast() || addr.IsLinkLocalMulticast() ||
		addr.IsMulticast() || addr.IsUnspecified() || addr.IsInterfaceLocalMulticast() {
		return false
	}
	return !cgnat.Contains(addr)
}

var (
	// cgnat is carrier-grade NAT space, often a provider's internal
	// network.
	cgnat = netip.MustParsePrefix("100.64.0.0/10")
	// nat64 is the well-known prefix of IPv4 addresses translated by
	// NAT64.
	nat64 = netip.MustParsePrefix("64:ff9b::/96")
)
