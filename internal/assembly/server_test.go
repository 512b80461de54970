package assembly_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"connectrpc.com/connect"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/metric/noop"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/spool-run/spool"
	"github.com/spool-run/spool/client"
	spoolv1 "github.com/spool-run/spool/gen/spool/v1"
	"github.com/spool-run/spool/gen/spool/v1/spoolv1connect"
	"github.com/spool-run/spool/internal/assembly"
	"github.com/spool-run/spool/internal/config"
	"github.com/spool-run/spool/internal/events"
	"github.com/spool-run/spool/internal/wire"
	"github.com/spool-run/spool/server"
	"github.com/spool-run/spool/spooltest"
)

// testConfig gives a server a one-second heartbeat, so leases can be two
// seconds long.
func testConfig(c *server.Config) {
	c.Server.ShutdownGrace = 5 * time.Second
	c.Execution.HeartbeatInterval = time.Second
	c.Jobs.Lease = 2 * time.Second
}

func start(t testing.TB, tweaks ...func(*server.Config)) *spooltest.Server {
	t.Helper()
	return spooltest.NewServer(t, spooltest.Config{Server: func(c *server.Config) {
		testConfig(c)
		for _, f := range tweaks {
			f(c)
		}
	}})
}

// api is the whole JobService as a worker sees it, with the client's
// conveniences beside it: these tests speak the protocol itself.
type api struct {
	*client.Client
	spoolv1connect.JobServiceClient
}

// newClient calls srv with its admin key, or with key when one is given.
func newClient(t testing.TB, srv *spooltest.Server, key ...string) *api {
	t.Helper()
	k := srv.AdminKey
	if len(key) > 0 {
		k = key[0]
	}
	c, err := client.New(client.Config{URL: srv.URL, APIKey: k})
	if err != nil {
		t.Fatal(err)
	}
	rpc, err := wire.Dial(srv.URL, wire.Options{APIKey: k})
	if err != nil {
		t.Fatal(err)
	}
	return &api{Client: c, JobServiceClient: rpc}
}

// withKey sends an API key with every request.
type withKey struct {
	base http.RoundTripper // nil: http.DefaultTransport
	key  string
}

func (k withKey) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+k.key)
	if k.base == nil {
		return http.DefaultTransport.RoundTrip(r)
	}
	return k.base.RoundTrip(r)
}

func wantCode(t *testing.T, err error, code connect.Code, what string) {
	t.Helper()
	if connect.CodeOf(err) != code {
		t.Fatalf("%s: got %v, want %s", what, err, code)
	}
}

func submit(t *testing.T, c *api, argv ...string) *spool.Job {
	t.Helper()
	j, _, err := c.Submit(context.Background(), client.SubmitParams{Argv: argv})
	if err != nil {
		t.Fatal(err)
	}
	return j
}

// dequeue leases one job, waiting for one up to 20 s: a job whose lease
// runs out is there again once the reaper has settled it.
func dequeue(t *testing.T, c *api, vis int32) *spoolv1.JobLease {
	t.Helper()
	resp, err := c.DequeueJobs(context.Background(), connect.NewRequest(&spoolv1.DequeueJobsRequest{MaxJobs: 1, WaitSeconds: 20, VisibilityTimeoutSeconds: vis, WorkerId: "test"}))
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Msg.GetLeases()) != 1 {
		t.Fatalf("got %d leases", len(resp.Msg.GetLeases()))
	}
	return resp.Msg.GetLeases()[0]
}

// TestProtocols: one handler speaks Connect JSON (curl), gRPC and gRPC-Web.
func TestProtocols(t *testing.T) {
	t.Parallel()
	r := start(t)

	// The README's curl example, as raw JSON over HTTP.
	body := `{"queue":"default","params":{"argv":["echo","hello"]},"requestId":"readme-1"}`
	req, _ := http.NewRequest(http.MethodPost, r.URL+"/spool.v1.JobService/EnqueueJob", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+r.AdminKey)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	var out struct {
		Job struct {
			JobID string `json:"jobId"`
			State string `json:"state"`
		} `json:"job"`
	}
	if resp.StatusCode != 200 || json.Unmarshal(raw, &out) != nil || out.Job.JobID == "" || out.Job.State != "JOB_STATE_QUEUED" {
		t.Fatalf("Connect JSON EnqueueJob: %d %s", resp.StatusCode, raw)
	}

	for name, opts := range map[string][]connect.ClientOption{"grpc": {connect.WithGRPC()}, "grpc-web": {connect.WithGRPCWeb()}, "connect": nil} {
		hc := http.DefaultClient
		if name == "grpc" {
			p := new(http.Protocols)
			p.SetUnencryptedHTTP2(true)
			hc = &http.Client{Transport: &http.Transport{Protocols: p}}
		}
		hc = &http.Client{Transport: withKey{hc.Transport, r.AdminKey}}
		api := spoolv1connect.NewJobServiceClient(hc, r.URL, opts...)
		got, err := api.GetJob(context.Background(), connect.NewRequest(&spoolv1.GetJobRequest{JobId: out.Job.JobID}))
		if err != nil || got.Msg.GetJob().GetParams().GetArgv()[1] != "hello" {
			t.Fatalf("%s GetJob: %v", name, err)
		}
	}

	// Health check for load balancers.
	hr, err := http.Get(r.URL + "/healthz")
	if err != nil || hr.StatusCode != 200 {
		t.Fatalf("healthz: %v %v", hr, err)
	}
	hr.Body.Close()
}

// TestJobLifecycle: enqueue, lease, heartbeat, publish, follow, complete,
// through the API.
func TestJobLifecycle(t *testing.T) {
	t.Parallel()
	r := start(t)
	c := newClient(t, r)
	ctx := context.Background()
	job := submit(t, c, "echo", "hi")
	if job.Execution.MaxBatchSize != 50 {
		t.Fatalf("the job does not carry the server's batching config: %v", job.Execution)
	}
	lease := dequeue(t, c, 10)
	if lease.GetJob().GetJobId() != job.ID || lease.GetNextSequence() != 1 || lease.GetNextLine() != 1 || lease.GetTaskToken() == "" {
		t.Fatalf("lease: %v", lease)
	}

	stream, err := c.StreamEvents(ctx, connect.NewRequest(&spoolv1.StreamEventsRequest{JobId: job.ID, Follow: true, Unpack: true}))
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan []string, 1)
	go func() {
		var lines []string
		for stream.Receive() {
			m := stream.Msg()
			if m.GetFinishedJob() != nil {
				lines = append(lines, "finished:"+m.GetFinishedJob().GetState().String())
				continue
			}
			if d := m.GetEvent().GetOutputData(); d != nil {
				lines = append(lines, string(d.GetOutput()))
			} else {
				lines = append(lines, m.GetEvent().GetEventType().String())
			}
		}
		got <- lines
	}()

	// The follower is registered once its stream has its headers; poll the
	// heartbeat until the server reports it watched.
	var hb *connect.Response[spoolv1.UpdateJobVisibilityResponse]
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		hb, err = c.UpdateJobVisibility(ctx, connect.NewRequest(&spoolv1.UpdateJobVisibilityRequest{TaskToken: lease.GetTaskToken(), VisibilityTimeoutSeconds: 30}))
		if err != nil || hb.Msg.GetCancelRequested() {
			t.Fatalf("heartbeat: %v %v", hb, err)
		}
		if hb.Msg.GetWatched() || time.Now().After(deadline) {
			break
		}
	}
	if !hb.Msg.GetWatched() {
		t.Fatal("heartbeat does not report the live follower")
	}
	now := timestamppb.Now()
	evs := []*spoolv1.JobEvent{
		{Sequence: 1, Timestamp: now, EventType: spoolv1.EventType_EVENT_TYPE_PROCESS_START, EventData: &spoolv1.JobEvent_ProcessStart{ProcessStart: &spoolv1.ProcessStartEvent{Pid: 1}}},
		events.Batch{Sequence: 2, Untimed: true, Lines: []events.Line{
			{Data: []byte("hi"), Stream: spoolv1.StreamType_STREAM_TYPE_STDOUT, Time: now.AsTime()},
			{Data: []byte("there"), Stream: spoolv1.StreamType_STREAM_TYPE_STDERR, Time: now.AsTime()}}}.Event(),
		{Sequence: 4, Timestamp: now, EventType: spoolv1.EventType_EVENT_TYPE_PROCESS_END, EventData: &spoolv1.JobEvent_ProcessEnd{ProcessEnd: &spoolv1.ProcessEndEvent{}}},
	}
	pub, err := c.PublishEvents(ctx, connect.NewRequest(&spoolv1.PublishEventsRequest{TaskToken: lease.GetTaskToken(), Events: evs}))
	if err != nil || pub.Msg.GetLastSequence() != 4 || pub.Msg.GetLineCount() != 2 {
		t.Fatalf("publish: %v %v", pub, err)
	}
	if !pub.Msg.GetWatched() {
		t.Fatal("publish does not report the live follower")
	}
	// A retry of the same publish is a no-op.
	if _, err := c.PublishEvents(ctx, connect.NewRequest(&spoolv1.PublishEventsRequest{TaskToken: lease.GetTaskToken(), Events: evs})); err != nil {
		t.Fatalf("re-publish: %v", err)
	}
	done, err := c.CompleteJob(ctx, connect.NewRequest(&spoolv1.CompleteJobRequest{TaskToken: lease.GetTaskToken(), Result: &spoolv1.JobResult{StartedAt: now}}))
	if err != nil || done.Msg.GetJob().GetState() != spoolv1.JobState_JOB_STATE_SUCCEEDED {
		t.Fatalf("complete: %v %v", done, err)
	}
	select {
	case lines := <-got:
		want := "EVENT_TYPE_PROCESS_START hi there EVENT_TYPE_PROCESS_END finished:JOB_STATE_SUCCEEDED"
		if strings.Join(lines, " ") != want {
			t.Fatalf("stream: %q, want %q", strings.Join(lines, " "), want)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the stream did not end when the job finished")
	}
	if err := stream.Err(); err != nil {
		t.Fatalf("stream error: %v", err)
	}
}

// TestTokensAreFenced: forged, foreign and tampered tokens are
// InvalidArgument; an old attempt's real token is FailedPrecondition.
func TestTokensAreFenced(t *testing.T) {
	t.Parallel()
	r := start(t)
	c := newClient(t, r)
	ctx := context.Background()
	submit(t, c, "true")
	l1 := dequeue(t, c, 2)

	tampered := []byte(l1.GetTaskToken())
	tampered[len(tampered)/2] ^= 2
	for name, tok := range map[string]string{"empty": "", "forged": "st1.eyJqIjoiYSJ9.AAAA", "tampered": string(tampered), "garbage": "hello"} {
		_, err := c.UpdateJobVisibility(ctx, connect.NewRequest(&spoolv1.UpdateJobVisibilityRequest{TaskToken: tok}))
		wantCode(t, err, connect.CodeInvalidArgument, name+" token heartbeat")
		_, err = c.CompleteJob(ctx, connect.NewRequest(&spoolv1.CompleteJobRequest{TaskToken: tok, Result: &spoolv1.JobResult{}}))
		wantCode(t, err, connect.CodeInvalidArgument, name+" token complete")
	}

	l2 := dequeue(t, c, 10) // once attempt 1's lease has run out

	var err error
	if l2.GetJob().GetAttempt() != 2 {
		t.Fatalf("redelivered as attempt %d", l2.GetJob().GetAttempt())
	}
	_, err = c.UpdateJobVisibility(ctx, connect.NewRequest(&spoolv1.UpdateJobVisibilityRequest{TaskToken: l1.GetTaskToken()}))
	wantCode(t, err, connect.CodeFailedPrecondition, "stale heartbeat")
	_, err = c.PublishEvents(ctx, connect.NewRequest(&spoolv1.PublishEventsRequest{TaskToken: l1.GetTaskToken(), Events: []*spoolv1.JobEvent{
		{Sequence: 1, Timestamp: timestamppb.Now(), EventType: spoolv1.EventType_EVENT_TYPE_PROCESS_START, EventData: &spoolv1.JobEvent_ProcessStart{ProcessStart: &spoolv1.ProcessStartEvent{}}}}}))
	wantCode(t, err, connect.CodeFailedPrecondition, "stale publish")
	_, err = c.CompleteJob(ctx, connect.NewRequest(&spoolv1.CompleteJobRequest{TaskToken: l1.GetTaskToken(), Result: &spoolv1.JobResult{}}))
	wantCode(t, err, connect.CodeFailedPrecondition, "stale complete")
	if _, err := c.CompleteJob(ctx, connect.NewRequest(&spoolv1.CompleteJobRequest{TaskToken: l2.GetTaskToken(), Result: &spoolv1.JobResult{}})); err != nil {
		t.Fatalf("attempt 2 complete: %v", err)
	}
}

// TestTokenFromAnotherServer: a token signed with another key is refused.
func TestTokenFromAnotherServer(t *testing.T) {
	t.Parallel()
	a, b := start(t), start(t)
	ca, cb := newClient(t, a), newClient(t, b)
	submit(t, ca, "true")
	l := dequeue(t, ca, 10)
	_, err := cb.UpdateJobVisibility(context.Background(), connect.NewRequest(&spoolv1.UpdateJobVisibilityRequest{TaskToken: l.GetTaskToken()}))
	wantCode(t, err, connect.CodeInvalidArgument, "token from another server")
	if !strings.Contains(err.Error(), "signature") {
		t.Fatalf("error does not say why: %v", err)
	}
}

func TestBadRequests(t *testing.T) {
	t.Parallel()
	r := start(t)
	c := newClient(t, r)
	ctx := context.Background()
	enq := func(req *spoolv1.EnqueueJobRequest) error {
		_, err := c.EnqueueJob(ctx, connect.NewRequest(req))
		return err
	}
	argv := &spoolv1.JobParams{Argv: []string{"true"}}
	cases := map[string]struct {
		err  error
		want string
	}{
		"no params":        {enq(&spoolv1.EnqueueJobRequest{}), "say what to run"},
		"argv and shell":   {enq(&spoolv1.EnqueueJobRequest{Params: &spoolv1.JobParams{Argv: []string{"a"}, Script: "b"}}), "exactly one"},
		"empty program":    {enq(&spoolv1.EnqueueJobRequest{Params: &spoolv1.JobParams{Argv: []string{""}}}), "argv[0]"},
		"bad queue":        {enq(&spoolv1.EnqueueJobRequest{Queue: "no spaces", Params: argv}), "queue"},
		"bad env":          {enq(&spoolv1.EnqueueJobRequest{Params: &spoolv1.JobParams{Argv: []string{"a"}, Env: map[string]string{"A=B": "c"}}}), "environment variable"},
		"NUL in arg":       {enq(&spoolv1.EnqueueJobRequest{Params: &spoolv1.JobParams{Argv: []string{"a", "b\x00"}}}), "NUL"},
		"attempts":         {enq(&spoolv1.EnqueueJobRequest{Params: argv, MaxAttempts: 1000}), "max_attempts"},
		"ref alone":        {enq(&spoolv1.EnqueueJobRequest{Params: &spoolv1.JobParams{Argv: []string{"a"}, Ref: "main"}}), "repository_url"},
		"negative timeout": {enq(&spoolv1.EnqueueJobRequest{Params: &spoolv1.JobParams{Argv: []string{"a"}, Timeout: durationpb.New(-5 * time.Second)}}), "params.timeout"},
		"long request":     {enq(&spoolv1.EnqueueJobRequest{Params: argv, RequestId: strings.Repeat("x", 201)}), "request_id"},
		"big stdin":        {enq(&spoolv1.EnqueueJobRequest{Params: &spoolv1.JobParams{Argv: []string{"cat"}, Stdin: make([]byte, 256<<10)}}), "stdin"},
		"reject reason":    {enq(&spoolv1.EnqueueJobRequest{RejectReason: "bad\x00message"}), "reject_reason"},
		"rejected, both":   {enq(&spoolv1.EnqueueJobRequest{RejectReason: "bad", Params: &spoolv1.JobParams{Argv: []string{"a"}, Script: "b"}}), "exactly one"},
	}
	_, err := c.DequeueJobs(ctx, connect.NewRequest(&spoolv1.DequeueJobsRequest{VisibilityTimeoutSeconds: 1}))
	cases["lease shorter than heartbeat"] = struct {
		err  error
		want string
	}{err, "visibility_timeout_seconds"}
	_, err = c.ListJobs(ctx, connect.NewRequest(&spoolv1.ListJobsRequest{Cursor: "garbage!"}))
	cases["bad cursor"] = struct {
		err  error
		want string
	}{err, "cursor"}
	_, err = c.ListJobs(ctx, connect.NewRequest(&spoolv1.ListJobsRequest{States: []spoolv1.JobState{42}}))
	cases["bad state"] = struct {
		err  error
		want string
	}{err, "state"}
	_, err = c.CompleteJob(ctx, connect.NewRequest(&spoolv1.CompleteJobRequest{TaskToken: "x"}))
	cases["no result"] = struct {
		err  error
		want string
	}{err, "task_token"}
	for name, tc := range cases {
		wantCode(t, tc.err, connect.CodeInvalidArgument, name)
		if !strings.Contains(tc.err.Error(), tc.want) {
			t.Fatalf("%s: %q does not mention %q", name, tc.err, tc.want)
		}
	}

	_, err = c.Job(ctx, "no-such-job")
	wantCode(t, err, connect.CodeNotFound, "GetJob unknown")
	_, err = c.Cancel(ctx, "no-such-job", "")
	wantCode(t, err, connect.CodeNotFound, "CancelJob unknown")
	s, err := c.StreamEvents(ctx, connect.NewRequest(&spoolv1.StreamEventsRequest{JobId: "no-such-job"}))
	if err == nil {
		for s.Receive() {
		}
		err = s.Err()
	}
	wantCode(t, err, connect.CodeNotFound, "StreamEvents unknown")
}

// TestShutdownEndsStreams: stopping the server ends a following stream with
// Unavailable (the client resumes elsewhere) without waiting out the grace.
func TestShutdownEndsStreams(t *testing.T) {
	t.Parallel()
	r := start(t, func(c *server.Config) { c.Server.ShutdownGrace = 30 * time.Second })
	c := newClient(t, r)
	j := submit(t, c, "sleep", "100")
	s, err := c.StreamEvents(context.Background(), connect.NewRequest(&spoolv1.StreamEventsRequest{JobId: j.ID, Follow: true}))
	if err != nil {
		t.Fatal(err)
	}
	// The server sends the headers once the feed is open.
	if h := s.ResponseHeader(); len(h) == 0 {
		t.Fatal("the stream has no headers")
	}
	ended := make(chan error, 1)
	go func() {
		for s.Receive() {
		}
		ended <- s.Err()
	}()
	begin := time.Now()
	r.Stop()
	if took := time.Since(begin); took > 10*time.Second {
		t.Fatalf("shutdown waited %v for an open stream", took)
	}
	select {
	case err := <-ended:
		wantCode(t, err, connect.CodeUnavailable, "stream at shutdown")
	case <-time.After(5 * time.Second):
		t.Fatal("the stream did not end")
	}
}

// TestRestartKeepsJobs: the embedded store survives a server restart.
func TestRestartKeepsJobs(t *testing.T) {
	t.Parallel()
	r := start(t)
	c := newClient(t, r)
	j := submit(t, c, "echo", "persist")
	r.Restart()
	got, err := newClient(t, r).Job(context.Background(), j.ID)
	if err != nil || got.Params.Argv[1] != "persist" {
		t.Fatalf("after restart: %v %v", got, err)
	}
}

func TestStartRefusals(t *testing.T) {
	t.Parallel()
	first := start(t)
	second := *first.Config()
	_, err := server.Start(context.Background(), &second)
	if err == nil || !strings.Contains(err.Error(), "in use by another spool server") {
		t.Fatalf("second server on one data dir: %v", err)
	}
	// Past what validation allows, to see the store's own limit refuse it.
	big := config.Default()
	big.Server.Addr, big.Server.DataDir = "127.0.0.1:0", t.TempDir()
	big.Execution.Batching.MaxBatchBytes = 32 << 20
	_, err = assembly.Start(context.Background(), big, assembly.Options{})
	if err == nil || !strings.Contains(err.Error(), "max_batch_bytes") || !strings.Contains(err.Error(), "or less") {
		t.Fatalf("batch larger than the store's item limit: %v", err)
	}
}

// TestRestartGracesRunningLeases: leases do not run while no server does;
// a server coming back gives running jobs a lease length to reconnect
// instead of re-queueing them on its first sweep.
func TestRestartGracesRunningLeases(t *testing.T) {
	t.Parallel()
	sweeps := &sweepCount{changed: make(chan struct{})}
	// The job's lease is 2 s; the grace a restart gives is the configured
	// lease, long enough that the first sweep comes well within it.
	r := start(t, func(c *server.Config) { c.Meters, c.Jobs.Lease = sweeps, 10*time.Second })
	c := newClient(t, r)
	j := submit(t, c, "sleep", "60")
	l := dequeue(t, c, 2)
	r.Stop()
	// What is tested is a lease that ran out by the clock while no server
	// ran: nothing but the clock can make that happen.
	time.Sleep(time.Until(l.GetLeaseExpiresAt().AsTime()) + 100*time.Millisecond)
	before := sweeps.count()
	r.Restart()
	sweeps.waitFor(t, before+1)
	got, err := newClient(t, r).Job(context.Background(), j.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.State != spool.Running || got.Attempt != 1 {
		t.Fatalf("after the restart's first sweep the job is %s on attempt %d; want still running, attempt 1", got.State, got.Attempt)
	}
}

// sweepCount is a meter provider that counts the reaper's sweeps: each
// sweep adds what it settled, nothing or more, to spool.leases.settled.
type sweepCount struct {
	noop.MeterProvider
	mu      sync.Mutex
	n       int
	changed chan struct{} // closed and replaced at each sweep
}

func (p *sweepCount) Meter(string, ...metric.MeterOption) metric.Meter { return sweepMeter{p: p} }

func (p *sweepCount) swept() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.n++
	close(p.changed)
	p.changed = make(chan struct{})
}

func (p *sweepCount) count() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.n
}

// waitFor waits until n sweeps were made in all.
func (p *sweepCount) waitFor(t *testing.T, n int) {
	t.Helper()
	timeout := time.After(30 * time.Second)
	for {
		p.mu.Lock()
		got, changed := p.n, p.changed
		p.mu.Unlock()
		if got >= n {
			return
		}
		select {
		case <-changed:
		case <-timeout:
			t.Fatalf("the reaper swept %d times in 30 s, want %d", got, n)
		}
	}
}

type sweepMeter struct {
	noop.Meter
	p *sweepCount
}

func (m sweepMeter) Int64Counter(name string, opts ...metric.Int64CounterOption) (metric.Int64Counter, error) {
	if name != "spool.leases.settled" {
		return m.Meter.Int64Counter(name, opts...)
	}
	return sweepCounter{p: m.p}, nil
}

type sweepCounter struct {
	noop.Int64Counter
	p *sweepCount
}

func (c sweepCounter) Add(context.Context, int64, ...metric.AddOption) { c.p.swept() }

// recorder notes the encoding and size of request bodies.
type recorder struct {
	mu       sync.Mutex
	encoding []string
	sizes    []int64
}

func (r *recorder) RoundTrip(req *http.Request) (*http.Response, error) {
	r.mu.Lock()
	r.encoding = append(r.encoding, req.Header.Get("Content-Encoding"))
	r.sizes = append(r.sizes, req.ContentLength)
	r.mu.Unlock()
	return http.DefaultTransport.RoundTrip(req)
}

// TestZstdRequests: a client asking for compressed requests sends zstd,
// and the server reads it.
func TestZstdRequests(t *testing.T) {
	t.Parallel()
	r := start(t)
	rec := &recorder{}
	c, err := wire.Dial(r.URL, wire.Options{Compress: true, APIKey: r.AdminKey, HTTPClient: &http.Client{Transport: rec}})
	if err != nil {
		t.Fatal(err)
	}
	script := strings.Repeat("echo 'the same line of output, again and again'\n", 400)
	resp, err := c.EnqueueJob(context.Background(), connect.NewRequest(&spoolv1.EnqueueJobRequest{Params: &spoolv1.JobParams{Script: script}}))
	if err != nil {
		t.Fatal(err)
	}
	j := resp.Msg.GetJob()
	got, err := newClient(t, r).Job(context.Background(), j.GetJobId())
	if err != nil || got.Params.Script != script {
		t.Fatalf("the server did not read the compressed request back whole: %v", err)
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if rec.encoding[0] != "zstd" || rec.sizes[0] <= 0 || rec.sizes[0] > int64(len(script))/10 {
		t.Fatalf("request sent with encoding %q, %d bytes for a %d-byte script", rec.encoding[0], rec.sizes[0], len(script))
	}
}

// TestMetrics: /metrics reports job and RPC figures in the Prometheus text
// format.
func TestMetrics(t *testing.T) {
	t.Parallel()
	r := start(t)
	c := newClient(t, r)
	submit(t, c, "true")
	l := dequeue(t, c, 10)
	if _, err := c.CompleteJob(context.Background(), connect.NewRequest(&spoolv1.CompleteJobRequest{TaskToken: l.GetTaskToken(), Result: &spoolv1.JobResult{ExitCode: 1}})); err != nil {
		t.Fatal(err)
	}
	if _, err := c.EnqueueJob(context.Background(), connect.NewRequest(&spoolv1.EnqueueJobRequest{RejectReason: "not a job spec"})); err != nil {
		t.Fatal(err)
	}
	resp, err := (&http.Client{Transport: withKey{nil, r.AdminKey}}).Get(r.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, want := range []string{
		`spool_jobs_enqueued_total{queue="default"} 1`,
		`spool_jobs_rejected_total{queue="default"} 1`,
		`spool_jobs_leased_total{queue="default"} 1`,
		`spool_jobs_finished_total{queue="default",state="failed"} 1`,
		`spool_followers 0`,
		`rpc_server_duration_milliseconds_count{`,
		`go_goroutines`,
	} {
		if !strings.Contains(string(body), want) {
			t.Fatalf("/metrics lacks %q:\n%s", want, body)
		}
	}
}
