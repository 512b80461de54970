package service_test

import (
	"context"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudwatchlogs"
	"github.com/aws/aws-sdk-go-v2/service/cloudwatchlogs/types"

	spoolv1 "github.com/spool-run/spool/gen/spool/v1"
	"github.com/spool-run/spool/internal/config"
	"github.com/spool-run/spool/internal/ingest"
	"github.com/spool-run/spool/internal/ingest/ingesttest"
	"github.com/spool-run/spool/internal/mototest"
	"github.com/spool-run/spool/internal/safebuf"
	"github.com/spool-run/spool/internal/seal"
	"github.com/spool-run/spool/internal/service"
	"github.com/spool-run/spool/internal/store/backends/memstore"
	"github.com/spool-run/spool/internal/token"
)

// TestScheduledBackfill: two servers sharing a store, each with the same
// scheduled backfill of a CloudWatch log group on moto_server. Some of a
// stream's events were delivered as a shipper sends them: the round, run
// by whichever server claims it (the other reads nothing), adds the
// others after them, in CloudWatch's order, each once, and opens a job for
// a stream never delivered. The same round again does nothing; the next
// round, on the other server, adds only a new event.
func TestScheduledBackfill(t *testing.T) {
	cw, endpoint := mototest.CloudWatch(t)
	const group = "/ecs/api"
	if _, err := cw.CreateLogGroup(t.Context(), &cloudwatchlogs.CreateLogGroupInput{LogGroupName: aws.String(group)}); err != nil {
		t.Fatal(err)
	}
	at := time.Now().Add(-10 * time.Minute).Truncate(time.Millisecond)
	web := mototest.PutLogEvents(t, cw, group, "web/1", at, "a", "b", "c", "d", "e", "f")
	mototest.PutLogEvents(t, cw, group, "worker/1", at, "starting", "done")
	// Outside the lookback: no round reads it.
	mototest.PutLogEvents(t, cw, group, "old/1", at.Add(-3*time.Hour), "long ago")

	cfg := config.Default()
	cfg.Auth.Disabled = true
	cfg.Ingest.Backfill = map[string]config.Backfill{"api": {LogGroup: group, EverySeconds: 60, Endpoint: endpoint}}
	st := memstore.New()
	key := make([]byte, 32)
	var logs safebuf.Buffer
	log := slog.New(slog.NewTextHandler(&logs, nil))
	core := func() *service.Service {
		signer, err := token.NewSigner(key)
		if err != nil {
			t.Fatal(err)
		}
		sealer, err := seal.New(key)
		if err != nil {
			t.Fatal(err)
		}
		return service.New(service.Options{Store: st, Config: cfg, Signer: signer, Sealer: sealer, Log: log})
	}
	a, b := core(), core()
	// rounds counts the rounds run, by either server.
	rounds := func() int { return strings.Count(logs.String(), "scheduled backfill from CloudWatch Logs") }
	ctx := service.WithCredentials(context.Background(), service.Credentials{Host: "localhost"})

	// A shipper delivered a, b and e.
	var lines []byte
	for _, e := range []ingesttest.Event{web[0], web[1], web[4]} {
		var err error
		lines, err = ingest.AppendLine(lines, ingest.Event{Source: group + ":web/1", ID: e.ID, Timestamp: time.UnixMilli(e.Timestamp), Message: e.Message})
		if err != nil {
			t.Fatal(err)
		}
	}
	sum, err := a.IngestLines(ctx, strings.NewReader(string(lines)))
	if err != nil || sum.Accepted != 3 {
		t.Fatalf("delivery: %+v, %v", sum, err)
	}
	webJob := sum.Sources[0].JobID

	now := time.Now()
	round := now.Truncate(time.Minute)
	for _, s := range []*service.Service{a, b, a} {
		next, err := s.RunBackfills(ctx, now)
		if err != nil {
			t.Fatal(err)
		}
		if want := round.Add(time.Minute); !next.Equal(want) {
			t.Fatalf("next round at %v, want %v", next, want)
		}
	}
	if n := rounds(); n != 1 {
		t.Fatalf("%d rounds run by the two servers at %v, want 1:\n%s", n, now, logs.String())
	}
	if got, want := logOf(t, a, ctx, webJob), []string{"a", "b", "e", "c", "d", "f"}; !slices.Equal(got, want) {
		t.Fatalf("web/1 after the round: %q, want %q", got, want)
	}
	workerJob := sourceJob(t, a, ctx, group+":worker/1")
	if got := logOf(t, a, ctx, workerJob); !slices.Equal(got, []string{"starting", "done"}) {
		t.Fatalf("worker/1, never delivered: %q", got)
	}
	if j := coreSourceJobs(t, a, ctx, group+":old/1"); len(j) != 0 {
		t.Fatalf("a stream with nothing within the lookback got a job: %v", j)
	}

	// A new event; the next round is b's to claim, and a then finds it
	// claimed.
	if _, err := cw.PutLogEvents(t.Context(), &cloudwatchlogs.PutLogEventsInput{LogGroupName: aws.String(group), LogStreamName: aws.String("web/1"),
		LogEvents: []types.InputLogEvent{{Timestamp: aws.Int64(at.Add(time.Second).UnixMilli()), Message: aws.String("g")}}}); err != nil {
		t.Fatal(err)
	}
	later := now.Add(time.Minute)
	for _, s := range []*service.Service{b, a} {
		if _, err := s.RunBackfills(ctx, later); err != nil {
			t.Fatal(err)
		}
	}
	if n := rounds(); n != 2 {
		t.Fatalf("%d rounds run by the two servers, want 2:\n%s", n, logs.String())
	}
	if !strings.Contains(logs.String(), "read=9 added=1") {
		t.Errorf("the second round's log does not say it read 9 events and added 1:\n%s", logs.String())
	}
	if got, want := logOf(t, a, ctx, webJob), []string{"a", "b", "e", "c", "d", "f", "g"}; !slices.Equal(got, want) {
		t.Fatalf("web/1 after the next round: %q, want %q", got, want)
	}
}

// TestScheduledBackfillFailure: a backfill whose log group is missing
// says so, naming it, and its round is not retried until the next.
func TestScheduledBackfillFailure(t *testing.T) {
	_, endpoint := mototest.CloudWatch(t)
	cfg := config.Default()
	cfg.Auth.Disabled = true
	cfg.Ingest.Backfill = map[string]config.Backfill{"gone": {LogGroup: "/no/such/group", Endpoint: endpoint}}
	signer, _ := token.NewSigner(make([]byte, 32))
	sealer, _ := seal.New(make([]byte, 32))
	s := service.New(service.Options{Store: memstore.New(), Config: cfg, Signer: signer, Sealer: sealer})
	now := time.Now()
	_, err := s.RunBackfills(context.Background(), now)
	if err == nil || !strings.Contains(err.Error(), "backfill gone") || !strings.Contains(err.Error(), "/no/such/group") {
		t.Fatalf("RunBackfills of a missing group: %v", err)
	}
	if _, err := s.RunBackfills(context.Background(), now.Add(time.Second)); err != nil {
		t.Fatalf("the same round again: %v, want nothing done", err)
	}
}

// logOf is a job's lines, read through the core.
func logOf(t *testing.T, s *service.Service, ctx context.Context, jobID string) []string {
	t.Helper()
	page, err := s.ReadLines(ctx, service.LinesRequest{JobID: jobID})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, ev := range page.Lines {
		out = append(out, string(ev.GetOutputData().GetOutput()))
	}
	return out
}

// coreSourceJobs are the external jobs of source, through the core.
func coreSourceJobs(t *testing.T, s *service.Service, ctx context.Context, source string) []*spoolv1.Job {
	t.Helper()
	resp, err := s.ListJobs(ctx, &spoolv1.ListJobsRequest{Source: source})
	if err != nil {
		t.Fatal(err)
	}
	return resp.GetJobs()
}

// sourceJob is the one job of source.
func sourceJob(t *testing.T, s *service.Service, ctx context.Context, source string) string {
	t.Helper()
	jobs := coreSourceJobs(t, s, ctx, source)
	if len(jobs) != 1 {
		t.Fatalf("%d jobs of %s, want 1", len(jobs), source)
	}
	return jobs[0].GetJobId()
}
