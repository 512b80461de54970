package cli

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudwatchlogs"
	"github.com/aws/aws-sdk-go-v2/service/cloudwatchlogs/types"

	"github.com/spool-run/spool/client"
	"github.com/spool-run/spool/internal/cwlogs"
	"github.com/spool-run/spool/internal/ingest/ingesttest"
	"github.com/spool-run/spool/internal/mototest"
	"github.com/spool-run/spool/spooltest"
)

// sourceLog is the job of source (the only one) and its log's lines.
func sourceLog(t *testing.T, srv *spooltest.Server, source string) (string, []string) {
	t.Helper()
	jobs, _, err := srv.Client().JobsPage(t.Context(), client.ListParams{Source: source})
	if err != nil || len(jobs) != 1 {
		t.Fatalf("jobs of source %s: %d, %v; want 1", source, len(jobs), err)
	}
	log, err := srv.Client().ReadLog(t.Context(), jobs[0].ID)
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	for _, ev := range log {
		for _, l := range ev.Lines {
			lines = append(lines, l.Text)
		}
	}
	return jobs[0].ID, lines
}

// TestIngestBackfill: events of a CloudWatch log group on moto_server, some
// of them delivered through the Firehose endpoint as a subscription
// delivers them: the backfill adds the others to the stream's job, each
// once and in CloudWatch's order after the delivered ones, and opens a job
// for a stream never delivered; run again, it adds nothing; the job's log
// rebuilds to the same.
func TestIngestBackfill(t *testing.T) {
	cw, endpoint := mototest.CloudWatch(t)
	srv := spooltest.NewServer(t)
	r := run(srv, "keys", "create", "--role", "ingest", "--name", "backfill")
	if r.code != 0 {
		t.Fatalf("keys create: exit %d: %s", r.code, r.stderr)
	}
	key := lastLine(r.stdout)

	const group = "/ecs/api"
	if _, err := cw.CreateLogGroup(t.Context(), &cloudwatchlogs.CreateLogGroupInput{LogGroupName: aws.String(group)}); err != nil {
		t.Fatal(err)
	}
	at := time.Now().Add(-time.Hour).Truncate(time.Millisecond)
	var messages []string
	for i := range 10 {
		messages = append(messages, fmt.Sprintf("request %d\n", i))
	}
	pushed := mototest.PutLogEvents(t, cw, group, "web/1", at, messages...)
	mototest.PutLogEvents(t, cw, group, "worker/1", at.Add(time.Second), "starting", "two\nlines", "done")
	// Outside --since: read by no backfill below.
	mototest.PutLogEvents(t, cw, group, "old/1", at.Add(-2*time.Hour), "long ago")

	// The subscription delivered five of them, not the others (a delivery
	// Firehose gave up, a subscription made late).
	delivered := []ingesttest.Event{pushed[0], pushed[1], pushed[2], pushed[5], pushed[6]}
	body := ingesttest.FirehoseBody("req-1", at.UnixMilli(), ingesttest.Record(ingesttest.DataMessage(group, "web/1", delivered...)))
	req, _ := http.NewRequest(http.MethodPost, srv.URL+"/api/v1/ingest/firehose", bytes.NewReader(body))
	req.Header.Set("X-Amz-Firehose-Access-Key", key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("Firehose delivery: %v %v", resp, err)
	}
	resp.Body.Close()

	backfill := func(args ...string) result {
		base := []string{"--server", srv.URL, "--api-key", key, "ingest", "backfill", "--log-group", group, "--since", "90m", "--endpoint", endpoint}
		return runLocal(append(base, args...)...)
	}
	r = backfill()
	if r.code != 0 {
		t.Fatalf("backfill: exit %d: %s", r.code, r.stderr)
	}
	webJob, webLines := sourceLog(t, srv, group+":web/1")
	workerJob, workerLines := sourceLog(t, srv, group+":worker/1")
	wantOut := fmt.Sprintf("read 13 events from 2 log streams: 8 added, 5 already there\n"+
		"  /ecs/api:web/1  %s  10 read, 5 added\n"+
		"  /ecs/api:worker/1  %s (opened)  3 read, 3 added\n", webJob, workerJob)
	if r.stdout != wantOut {
		t.Fatalf("backfill said:\n%s\nwant:\n%s", r.stdout, wantOut)
	}
	wantWeb := []string{"request 0", "request 1", "request 2", "request 5", "request 6", "request 3", "request 4", "request 7", "request 8", "request 9"}
	if !slices.Equal(webLines, wantWeb) {
		t.Errorf("log of web/1 after the backfill: %q, want %q", webLines, wantWeb)
	}
	wantWorker := []string{"starting", "two", "lines", "done"}
	if !slices.Equal(workerLines, wantWorker) {
		t.Errorf("log of worker/1 (never delivered): %q, want %q", workerLines, wantWorker)
	}

	// Again, through the command's core, to see its progress line: what
	// spool has is all there, and nothing is added.
	var out, errOut bytes.Buffer
	e := &env{server: srv.URL, creds: credentials{key: key}, out: &out, errOut: &errOut}
	cfg := ingestBackfillConfig{query: cwlogs.Query{LogGroup: group, Since: at.Add(-time.Minute)}, aws: cwlogs.Config{Endpoint: endpoint}, asJSON: true, now: time.Now}
	if err := runIngestBackfill(t.Context(), cfg, e); err != nil {
		t.Fatal(err)
	}
	var sum backfillSummary
	if err := json.Unmarshal(out.Bytes(), &sum); err != nil {
		t.Fatalf("backfill --json: %v: %s", err, out.String())
	}
	if sum.Read != 13 || sum.Added != 0 || sum.Already != 13 || len(sum.Sources) != 2 || sum.Sources[0].JobID != webJob || sum.Sources[1].Opened {
		t.Errorf("backfill again: %+v", sum)
	}
	if !strings.HasPrefix(errOut.String(), "read 13 events, 0 added, through ") {
		t.Errorf("progress line: %q", errOut.String())
	}
	if _, lines := sourceLog(t, srv, group+":web/1"); !slices.Equal(lines, wantWeb) {
		t.Errorf("log of web/1 after a second backfill: %q", lines)
	}
	if r := run(srv, "logs", "rebuild", webJob); r.code != 0 || !strings.Contains(r.stdout, "rebuilt from 10 events: 10 lines") || !strings.Contains(r.stdout, "nothing was written") {
		t.Errorf("logs rebuild: exit %d: %s%s", r.code, r.stdout, r.stderr)
	}

	// One stream, and a span that leaves the others out: a new event of
	// worker/1 is added, nothing of web/1 is read.
	if _, err := cw.PutLogEvents(t.Context(), &cloudwatchlogs.PutLogEventsInput{LogGroupName: aws.String(group), LogStreamName: aws.String("worker/1"),
		LogEvents: []types.InputLogEvent{{Timestamp: aws.Int64(at.Add(2 * time.Second).UnixMilli()), Message: aws.String("restarted")}}}); err != nil {
		t.Fatal(err)
	}
	r = backfill("--log-stream", "worker/1", "--until", time.Now().Format(time.RFC3339Nano))
	if r.code != 0 || !strings.HasPrefix(r.stdout, "read 4 events from 1 log stream: 1 added, 3 already there\n") {
		t.Fatalf("backfill of one stream: exit %d: %s%s", r.code, r.stdout, r.stderr)
	}
	if _, lines := sourceLog(t, srv, group+":worker/1"); !slices.Equal(lines, append(wantWorker, "restarted")) {
		t.Errorf("log of worker/1: %q", lines)
	}

	// A rebuild that reads CloudWatch first: the event spool lacks is in
	// the rebuilt log.
	if _, err := cw.PutLogEvents(t.Context(), &cloudwatchlogs.PutLogEventsInput{LogGroupName: aws.String(group), LogStreamName: aws.String("web/1"),
		LogEvents: []types.InputLogEvent{{Timestamp: aws.Int64(at.Add(3 * time.Second).UnixMilli()), Message: aws.String("request 10")}}}); err != nil {
		t.Fatal(err)
	}
	r = run(srv, "logs", "rebuild", webJob, "--from-cloudwatch", "--endpoint", endpoint)
	if r.code != 0 || !strings.Contains(r.stdout, " from 1 log stream: 1 added, ") || !strings.Contains(r.stdout, "rebuilt from 11 events: 11 lines") {
		t.Errorf("logs rebuild --from-cloudwatch: exit %d: %s%s", r.code, r.stdout, r.stderr)
	}
	if _, lines := sourceLog(t, srv, group+":web/1"); !slices.Equal(lines, append(slices.Clone(wantWeb), "request 10")) {
		t.Errorf("log of web/1 after the rebuild from CloudWatch: %q", lines)
	}
	wantWeb = append(wantWeb, "request 10")
	ran := run(srv, "submit", "--", "true")
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"logs", "rebuild", lastLine(ran.stdout), "--from-cloudwatch", "--endpoint", endpoint}, "was run by a worker, not sent from elsewhere"},
		{[]string{"logs", "rebuild", webJob, "--since", "1h"}, "--since, --region and --endpoint say where --from-cloudwatch reads: give it too"},
	} {
		if r := run(srv, c.args...); r.code != 1 || !strings.Contains(r.stderr, c.want) {
			t.Errorf("spool %s: exit %d, %q; want %q", strings.Join(c.args, " "), r.code, r.stderr, c.want)
		}
	}

	// What a person gets wrong is told, and nothing is sent.
	r = run(srv, "keys", "create", "--role", "read", "--name", "reader")
	readKey := lastLine(r.stdout)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--api-key", readKey, "ingest", "backfill", "--log-group", group, "--since", "2h", "--endpoint", endpoint}, "does not let this key send logs: use a key of role ingest or admin"},
		{[]string{"--api-key", "spool_nosuchkey", "ingest", "backfill", "--log-group", group, "--since", "2h", "--endpoint", endpoint}, "refused the key (the key sent came from --api-key"},
		{[]string{"--api-key", key, "ingest", "backfill", "--log-group", group}, `required flag(s) "since" not set`},
		{[]string{"--api-key", key, "ingest", "backfill", "--log-group", group + ":web/1", "--since", "2h"}, "looks like a source, group:stream: give --log-group and --log-stream"},
		{[]string{"--api-key", key, "ingest", "backfill", "--log-group", "/no/such/group", "--since", "2h", "--endpoint", endpoint}, "reading log group /no/such/group from CloudWatch Logs"},
	} {
		r := runLocal(append([]string{"--server", srv.URL}, c.args...)...)
		if r.code != 1 || !strings.Contains(r.stderr, c.want) {
			t.Errorf("spool %s: exit %d, %q; want %q", strings.Join(c.args, " "), r.code, r.stderr, c.want)
		}
	}
	if _, lines := sourceLog(t, srv, group+":web/1"); !slices.Equal(lines, wantWeb) {
		t.Errorf("log of web/1 after refused backfills: %q", lines)
	}
}

// BenchmarkIngestBackfill backfills a new log group of 10,000 events in
// two streams, none of which spool has, from moto_server into a real
// server on SQLite: the command's whole path, CloudWatch's pages to the
// jobs' stored logs.
//
//	go test -run '^$' -bench IngestBackfill -benchtime 3x ./internal/cli/
func BenchmarkIngestBackfill(b *testing.B) {
	const perStream = 5000
	endpoint := mototest.For(b).URL
	mototest.SetEnv(b)
	cw, err := cwlogs.NewClient(b.Context(), cwlogs.Config{Endpoint: endpoint})
	if err != nil {
		b.Fatal(err)
	}
	srv := spooltest.NewServer(b)
	at := time.Now().Add(-time.Hour).Truncate(time.Millisecond)
	messages := make([]types.InputLogEvent, perStream)
	for i := range messages {
		messages[i] = types.InputLogEvent{Timestamp: aws.Int64(at.UnixMilli() + int64(i)), Message: aws.String(fmt.Sprintf("GET /api/items/%d 200 %dms", i, i%97))}
	}
	for i := 0; b.Loop(); i++ {
		b.StopTimer()
		group := fmt.Sprintf("/bench/%d", i)
		if _, err := cw.CreateLogGroup(b.Context(), &cloudwatchlogs.CreateLogGroupInput{LogGroupName: aws.String(group)}); err != nil {
			b.Fatal(err)
		}
		for _, stream := range []string{"a", "b"} {
			if _, err := cw.CreateLogStream(b.Context(), &cloudwatchlogs.CreateLogStreamInput{LogGroupName: aws.String(group), LogStreamName: aws.String(stream)}); err != nil {
				b.Fatal(err)
			}
			if _, err := cw.PutLogEvents(b.Context(), &cloudwatchlogs.PutLogEventsInput{LogGroupName: aws.String(group), LogStreamName: aws.String(stream), LogEvents: messages}); err != nil {
				b.Fatal(err)
			}
		}
		b.StartTimer()
		r := run(srv, "ingest", "backfill", "--log-group", group, "--since", "2h", "--endpoint", endpoint)
		if r.code != 0 || !strings.HasPrefix(r.stdout, fmt.Sprintf("read %d events from 2 log streams: %d added", 2*perStream, 2*perStream)) {
			b.Fatalf("backfill: exit %d: %s%s", r.code, r.stdout, r.stderr)
		}
	}
	b.ReportMetric(float64(2*perStream*b.N)/b.Elapsed().Seconds(), "events/s")
}
