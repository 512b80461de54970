package e2e

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/spool-run/spool/client"
	spoolv1 "github.com/spool-run/spool/gen/spool/v1"
	"github.com/spool-run/spool/gen/spool/v1/spoolv1connect"
	"github.com/spool-run/spool/internal/store/backends/pgstore/pgtest"
)

// rpcs are the Connect clients of a server, as the admin.
type rpcs struct {
	jobs      spoolv1connect.JobServiceClient
	queues    spoolv1connect.QueueServiceClient
	schedules spoolv1connect.ScheduleServiceClient
}

func admin(c *client.Client) rpcs {
	h := connect.WithInterceptors(connect.UnaryInterceptorFunc(func(next connect.UnaryFunc) connect.UnaryFunc {
		return func(ctx context.Context, r connect.AnyRequest) (connect.AnyResponse, error) {
			r.Header().Set("Authorization", "Bearer "+adminKey)
			return next(ctx, r)
		}
	}))
	return rpcs{
		jobs:      spoolv1connect.NewJobServiceClient(http.DefaultClient, c.URL(), h),
		queues:    spoolv1connect.NewQueueServiceClient(http.DefaultClient, c.URL(), h),
		schedules: spoolv1connect.NewScheduleServiceClient(http.DefaultClient, c.URL(), h),
	}
}

func (r rpcs) enqueue(t *testing.T, req *spoolv1.EnqueueJobRequest) *spoolv1.Job {
	t.Helper()
	resp, err := r.jobs.EnqueueJob(context.Background(), connect.NewRequest(req))
	if err != nil {
		t.Fatalf("EnqueueJob: %v", err)
	}
	return resp.Msg.GetJob()
}

func (r rpcs) job(t *testing.T, id string) *spoolv1.Job {
	t.Helper()
	resp, err := r.jobs.GetJob(context.Background(), connect.NewRequest(&spoolv1.GetJobRequest{JobId: id}))
	if err != nil {
		t.Fatalf("GetJob %s: %v", id, err)
	}
	return resp.Msg.GetJob()
}

func (r rpcs) queue(t *testing.T, name string) *spoolv1.Queue {
	t.Helper()
	resp, err := r.queues.ListQueues(context.Background(), connect.NewRequest(&spoolv1.ListQueuesRequest{}))
	if err != nil {
		t.Fatalf("ListQueues: %v", err)
	}
	for _, q := range resp.Msg.GetQueues() {
		if q.GetName() == name {
			return q
		}
	}
	return &spoolv1.Queue{Name: name}
}

// waitState waits until job id is in state want.
func (r rpcs) waitState(t *testing.T, id string, want spoolv1.JobState) *spoolv1.Job {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(20 * time.Millisecond) {
		j := r.job(t, id)
		if j.GetState() == want {
			return j
		}
		if time.Now().After(deadline) {
			t.Fatalf("job %s is %v, not %v, after a minute", id, j.GetState(), want)
		}
	}
}

func script(s string) *spoolv1.JobParams { return &spoolv1.JobParams{Script: s} }

// TestDelayedAndChainedJobs: on each store, through a real server and
// worker, a delayed job waits SCHEDULED and runs at its time, not
// before; a job after another waits for it and runs once it succeeded; a
// job after a failing one is cancelled naming it; a retry waiting out its
// backoff holds no worker slot (another job runs meanwhile on the
// worker's only slot).
func TestDelayedAndChainedJobs(t *testing.T) {
	t.Parallel()
	onEveryStore(t, testDelayedAndChained)
}

// TestDelayedAndChainedJobsOnAWS is TestDelayedAndChainedJobs on the AWS
// store, where a scheduled job has no SQS message until it is promoted.
func TestDelayedAndChainedJobsOnAWS(t *testing.T) {
	t.Parallel()
	testDelayedAndChained(t, awsStore(t))
}

func testDelayedAndChained(t *testing.T, store []string) {
	_, c := startServer(t, freePort(t), t.TempDir(), store...)
	startWorker(t, "worker", c.URL(), t.TempDir(), "--concurrency", "1")
	r := admin(c)
	start := time.Now()
	delayed := r.enqueue(t, &spoolv1.EnqueueJobRequest{Params: script("date +%s.%N"), RunIn: durationpb.New(3 * time.Second)})
	if delayed.GetState() != spoolv1.JobState_JOB_STATE_SCHEDULED || delayed.GetRunAfter() == nil {
		t.Fatalf("a job submitted to run in 3 s is %v (run_after %v)", delayed.GetState(), delayed.GetRunAfter())
	}
	first := r.enqueue(t, &spoolv1.EnqueueJobRequest{Params: script("sleep 1; echo first")})
	second := r.enqueue(t, &spoolv1.EnqueueJobRequest{Params: script("echo second"), After: []string{first.GetJobId()}})
	failing := r.enqueue(t, &spoolv1.EnqueueJobRequest{Params: script("exit 3")})
	orphan := r.enqueue(t, &spoolv1.EnqueueJobRequest{Params: script("echo never"), After: []string{failing.GetJobId()}})
	if s := r.job(t, second.GetJobId()).GetState(); s != spoolv1.JobState_JOB_STATE_SCHEDULED {
		t.Fatalf("a job after a running one is %v", s)
	}
	if f := r.job(t, first.GetJobId()).GetFollowers(); !slices.Equal(f, []string{second.GetJobId()}) {
		t.Fatalf("the first job lists followers %q", f)
	}
	sj := r.waitState(t, second.GetJobId(), spoolv1.JobState_JOB_STATE_SUCCEEDED)
	fj := r.job(t, first.GetJobId())
	if !sj.GetStartedAt().AsTime().After(fj.GetResult().GetFinishedAt().AsTime()) {
		t.Fatalf("second started at %v, before the first finished at %v", sj.GetStartedAt().AsTime(), fj.GetResult().GetFinishedAt().AsTime())
	}
	oj := r.waitState(t, orphan.GetJobId(), spoolv1.JobState_JOB_STATE_CANCELLED)
	if e := oj.GetResult().GetError(); !strings.Contains(e, failing.GetJobId()) {
		t.Fatalf("the job after a failed one was cancelled with %q", e)
	}
	dj := r.waitState(t, delayed.GetJobId(), spoolv1.JobState_JOB_STATE_SUCCEEDED)
	if ran := dj.GetStartedAt().AsTime(); ran.Before(delayed.GetRunAfter().AsTime()) || ran.Sub(start) < 3*time.Second {
		t.Fatalf("a job delayed 3 s started %v after it was submitted (run_after %v)", ran.Sub(start), delayed.GetRunAfter().AsTime())
	}

	// A retry's backoff holds no slot: the worker has one, and a job
	// submitted while the retry waits runs in the meantime.
	retried := r.enqueue(t, &spoolv1.EnqueueJobRequest{Params: script("exit 1"), Retries: 1})
	waiting := r.waitState(t, retried.GetJobId(), spoolv1.JobState_JOB_STATE_SCHEDULED)
	if waiting.GetRunAfter() == nil || waiting.GetAttempt() != 1 {
		t.Fatalf("a retry waits with run_after %v on attempt %d", waiting.GetRunAfter(), waiting.GetAttempt())
	}
	other := r.enqueue(t, &spoolv1.EnqueueJobRequest{Params: script("echo meanwhile")})
	oth := r.waitState(t, other.GetJobId(), spoolv1.JobState_JOB_STATE_SUCCEEDED)
	if !oth.GetResult().GetFinishedAt().AsTime().Before(waiting.GetRunAfter().AsTime()) {
		t.Fatalf("the other job finished at %v, after the retry was due (%v): the retry held the slot",
			oth.GetResult().GetFinishedAt().AsTime(), waiting.GetRunAfter().AsTime())
	}
	if j := r.waitState(t, retried.GetJobId(), spoolv1.JobState_JOB_STATE_FAILED); j.GetAttempt() != 2 {
		t.Fatalf("the retried job ended on attempt %d", j.GetAttempt())
	}
}

// TestQueueLimitUnderTwentyWorkers: two servers on one PostgreSQL, four
// workers of five slots each (twenty) split between them, a queue limited
// to 5: sampled every 10 ms, never a sixth job running, and five running
// most of the time. Lowering the limit stops no running job.
func TestQueueLimitUnderTwentyWorkers(t *testing.T) {
	t.Parallel()
	store := configArgs(t, postgresConfig(pgtest.NewDatabase(t)))
	_, a := startServer(t, freePort(t), t.TempDir(), store...)
	_, b := startServer(t, freePort(t), t.TempDir(), store...)
	r := admin(a)
	const q, limit, jobs = "limited", 5, 60
	if _, err := r.queues.ConfigureQueue(context.Background(), connect.NewRequest(&spoolv1.ConfigureQueueRequest{Name: q, MaxRunning: ptr(int32(limit))})); err != nil {
		t.Fatal(err)
	}
	if got := r.queue(t, q).GetMaxRunning(); got != limit {
		t.Fatalf("max_running %d after configuring %d", got, limit)
	}
	ids := make([]string, jobs)
	for i := range ids {
		ids[i] = r.enqueue(t, &spoolv1.EnqueueJobRequest{Queue: q, Params: script("sleep 0.3")}).GetJobId()
	}
	for i, srv := range []*client.Client{a, b, a, b} {
		startWorker(t, fmt.Sprintf("worker %d", i), srv.URL(), t.TempDir(), "--queue", q, "--concurrency", "5")
	}
	most, samples, atLimit := int64(0), 0, 0
	for deadline := time.Now().Add(2 * time.Minute); ; time.Sleep(10 * time.Millisecond) {
		qs := r.queue(t, q)
		samples++
		most = max(most, qs.GetRunning())
		if qs.GetRunning() == limit {
			atLimit++
		}
		if qs.GetRunning() > limit {
			t.Fatalf("%d jobs of a queue limited to %d running at once", qs.GetRunning(), limit)
		}
		if qs.GetQueued()+qs.GetRunning() == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the queue did not drain: %v", qs)
		}
	}
	t.Logf("%d samples every 10 ms: at most %d running (limit %d), at the limit in %d", samples, most, limit, atLimit)
	if most != limit {
		t.Fatalf("never more than %d running under twenty worker slots, limit %d", most, limit)
	}
	for _, id := range ids {
		if j := r.job(t, id); j.GetState() != spoolv1.JobState_JOB_STATE_SUCCEEDED {
			t.Fatalf("job %s ended %v", id, j.GetState())
		}
	}
}

func ptr[T any](v T) *T { return &v }

// scheduleFor is how long TestScheduleOncePerTickAcrossServers runs its
// schedule: 12 s in the suite; SPOOL_E2E_SCHEDULE_FOR=10m for the figure
// (a schedule every second for 10 minutes makes exactly 600 jobs; give
// go test -timeout 25m).
func scheduleFor(t *testing.T) time.Duration {
	if v := os.Getenv("SPOOL_E2E_SCHEDULE_FOR"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil {
			t.Fatalf("SPOOL_E2E_SCHEDULE_FOR: %v", err)
		}
		return d
	}
	return 12 * time.Second
}

// TestScheduleOncePerTickAcrossServers: three servers on one PostgreSQL
// run a schedule that ticks every second; one server is killed and
// started again meanwhile. Every tick made exactly one job: the jobs'
// request ids name consecutive seconds, none twice, as many as the
// seconds the schedule ran.
func TestScheduleOncePerTickAcrossServers(t *testing.T) {
	t.Parallel()
	store := configArgs(t, postgresConfig(pgtest.NewDatabase(t)))
	type server struct {
		p    *proc
		c    *client.Client
		addr string
		dir  string
	}
	servers := make([]*server, 3)
	for i := range servers {
		s := &server{addr: freePort(t), dir: t.TempDir()}
		s.p, s.c = startServer(t, s.addr, s.dir, store...)
		servers[i] = s
	}
	r := admin(servers[0].c)
	const q = "ticks"
	name := "every-second"
	created, err := r.schedules.CreateSchedule(context.Background(), connect.NewRequest(&spoolv1.CreateScheduleRequest{Schedule: &spoolv1.Schedule{
		Name: name, Cron: "* * * * * *", Job: &spoolv1.EnqueueJobRequest{Queue: q, Params: script("true")}}}))
	if err != nil {
		t.Fatal(err)
	}
	from := created.Msg.GetSchedule().GetCreatedAt().AsTime()
	runFor := scheduleFor(t)
	// One server dies a third of the way in and comes back.
	time.Sleep(runFor / 3)
	servers[1].p.kill9(t)
	time.Sleep(2 * time.Second)
	servers[1].p, servers[1].c = startServer(t, servers[1].addr, servers[1].dir, store...)
	time.Sleep(time.Until(from.Add(runFor)))
	paused, err := r.schedules.PauseSchedule(context.Background(), connect.NewRequest(&spoolv1.PauseScheduleRequest{Name: name}))
	if err != nil {
		t.Fatal(err)
	}
	last := paused.Msg.GetSchedule().GetLastTickAt().AsTime()
	ticks := tickJobs(t, r, q)
	want := int(last.Sub(from.Truncate(time.Second)) / time.Second)
	t.Logf("a schedule every second for %v across three servers (one restarted): %d jobs, %d ticks from %v to %v", runFor, len(ticks), want, from, last)
	if len(ticks) != want {
		t.Fatalf("%d jobs for %d ticks", len(ticks), want)
	}
	for i := 1; i < len(ticks); i++ {
		if ticks[i].Sub(ticks[i-1]) != time.Second {
			t.Fatalf("ticks %v then %v", ticks[i-1], ticks[i])
		}
	}
}

// tickJobs returns the tick times of the jobs in queue q (by their request
// ids, "schedule/NAME/TIME"), sorted, failing on a tick seen twice.
func tickJobs(t *testing.T, r rpcs, q string) []time.Time {
	t.Helper()
	var out []time.Time
	seen := map[string]bool{}
	cursor := ""
	for {
		resp, err := r.jobs.ListJobs(context.Background(), connect.NewRequest(&spoolv1.ListJobsRequest{Queue: q, PageSize: 1000, Cursor: cursor}))
		if err != nil {
			t.Fatal(err)
		}
		for _, j := range resp.Msg.GetJobs() {
			id := j.GetRequestId()
			if seen[id] {
				t.Fatalf("two jobs of request %q", id)
			}
			seen[id] = true
			at, err := time.Parse(time.RFC3339, id[strings.LastIndex(id, "/")+1:])
			if err != nil {
				t.Fatalf("a schedule's job has request id %q: %v", id, err)
			}
			out = append(out, at)
		}
		if cursor = resp.Msg.GetNextCursor(); cursor == "" {
			break
		}
	}
	slices.SortFunc(out, time.Time.Compare)
	return out
}

// receiver is a webhook receiver that checks signatures and answers 500
// until told otherwise.
type receiver struct {
	secret string
	mu     sync.Mutex
	got    []delivery
	ok     atomic.Bool
}

type delivery struct {
	id, event string
	body      map[string]any
	status    int
}

func (rc *receiver) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	body, _ := io.ReadAll(req.Body)
	ts, sig := req.Header.Get("Spool-Timestamp"), req.Header.Get("Spool-Signature")
	mac := hmac.New(sha256.New, []byte(rc.secret))
	fmt.Fprintf(mac, "%s.%s", ts, body)
	status := http.StatusInternalServerError
	if rc.ok.Load() {
		status = http.StatusNoContent
	}
	if sig != "sha256="+hex.EncodeToString(mac.Sum(nil)) {
		status = http.StatusUnauthorized
	}
	d := delivery{id: req.Header.Get("Spool-Delivery"), event: req.Header.Get("Spool-Event"), status: status}
	_ = json.Unmarshal(body, &d.body)
	rc.mu.Lock()
	rc.got = append(rc.got, d)
	rc.mu.Unlock()
	w.WriteHeader(status)
}

func (rc *receiver) deliveries() []delivery {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return slices.Clone(rc.got)
}

// TestWebhooksSignedRetriedAndKeptAcrossARestart: a job with a notify
// URL, a receiver that checks the signature and answers 500 at first. The
// server records the failed try on the job, is killed, and started again;
// once the receiver answers 204 the server that came back delivers,
// with the same delivery id, and nothing more is sent for the job's end.
func TestWebhooksSignedRetriedAndKeptAcrossARestart(t *testing.T) {
	t.Parallel()
	const secret = "e2e-webhook-secret-0123456789"
	rc := &receiver{secret: secret}
	hook := httptest.NewServer(rc)
	t.Cleanup(hook.Close)
	env := []string{"SPOOL_NOTIFY_SECRET=" + secret, "SPOOL_NOTIFY_ALLOW_PRIVATE_ADDRESSES=true"}
	addr, dir := freePort(t), t.TempDir()
	srv, c := startServerEnv(t, addr, dir, env)
	startWorker(t, "worker", c.URL(), t.TempDir())
	r := admin(c)
	j := r.enqueue(t, &spoolv1.EnqueueJobRequest{Params: script("echo done"), Notify: []string{hook.URL + "/spool"}})
	r.waitState(t, j.GetJobId(), spoolv1.JobState_JOB_STATE_SUCCEEDED)
	var first *spoolv1.Delivery
	for deadline := time.Now().Add(time.Minute); first == nil; time.Sleep(20 * time.Millisecond) {
		if ds := r.job(t, j.GetJobId()).GetDeliveries(); len(ds) > 0 {
			first = ds[0]
		}
		if time.Now().After(deadline) {
			t.Fatal("no delivery recorded on the job within a minute of its end")
		}
	}
	if first.GetStatus() != http.StatusInternalServerError || first.GetDelivered() {
		t.Fatalf("the first try is recorded as %v", first)
	}
	srv.kill9(t)
	rc.ok.Store(true)
	_, c = startServerEnv(t, addr, dir, env)
	r = admin(c)
	var last *spoolv1.Delivery
	for deadline := time.Now().Add(2 * time.Minute); last == nil || !last.GetDelivered(); time.Sleep(50 * time.Millisecond) {
		ds := r.job(t, j.GetJobId()).GetDeliveries()
		last = ds[len(ds)-1]
		if time.Now().After(deadline) {
			t.Fatalf("not delivered after the restart: %v", ds)
		}
	}
	if last.GetDeliveryId() != first.GetDeliveryId() || last.GetTry() < 2 || last.GetStatus() != http.StatusNoContent {
		t.Fatalf("delivered as %v after %v", last, first)
	}
	if due := r.job(t, j.GetJobId()).GetNotifyDue(); due != nil {
		t.Fatalf("a delivered job still owes a webhook at %v", due.AsTime())
	}
	got := rc.deliveries()
	ok := 0
	for _, d := range got {
		if d.status == http.StatusUnauthorized {
			t.Fatalf("a delivery's signature did not check out: %+v", d)
		}
		if d.id != first.GetDeliveryId() || d.event != "job.succeeded" {
			t.Fatalf("delivery %+v, want id %s of job.succeeded", d, first.GetDeliveryId())
		}
		if d.body["job_id"] != j.GetJobId() {
			t.Fatalf("the document names job %v, want %s", d.body["job_id"], j.GetJobId())
		}
		if d.status == http.StatusNoContent {
			ok++
		}
	}
	if ok != 1 {
		t.Fatalf("the receiver took %d deliveries of one end, want 1 (of %d tries)", ok, len(got))
	}
}
