package assembly_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"connectrpc.com/connect"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/spool-run/spool"
	"github.com/spool-run/spool/client"
	"github.com/spool-run/spool/consumer"
	spoolv1 "github.com/spool-run/spool/gen/spool/v1"
	"github.com/spool-run/spool/internal/ingest/ingesttest"
	"github.com/spool-run/spool/internal/telemetry"
	"github.com/spool-run/spool/spooltest"
	"github.com/spool-run/spool/worker"
)

// metricsDoc is the operator's list of every metric spool exports. The
// tests below run a server, a worker and a consumer, make each of them
// record, scrape their /metrics and hold the list to what they export, in
// both directions: a metric added to the code without a row in the doc
// fails, and so does a row naming a metric that no longer exists.
const metricsDoc = "../../docs/metrics.md"

// notScraped are rows of docs/metrics.md the tests cannot make appear; a
// name belongs here only with the reason the test cannot produce it.
var notScraped = map[string]string{
	// Only PostgreSQL and AWS retry requests, and only under contention or
	// throttling; the server here runs on SQLite. storemetrics' tests
	// check these names and labels on a scrape, and awsstore's that the
	// SDK's retries reach them.
	"spool_store_retries_total":   "PostgreSQL and AWS only",
	"spool_store_throttles_total": "AWS only",
	// No job of the test waits SCHEDULED (none is delayed, retried or
	// runs after another), and none names a webhook URL: a receiver
	// would be on loopback, which the server refuses to POST to.
	// maintenance's and webhook's tests record these.
	"spool_scheduled_queued_total":    "no scheduled job",
	"spool_scheduled_cancelled_total": "no scheduled job",
	"spool_webhooks_tries_total":      "no webhook",
	"spool_webhooks_duration_seconds": "no webhook",
}

// TestMetricsDocServer: the server's and the worker's /metrics, after a
// job, a scatter that succeeds and one that fails, a rejected job, a lease
// handed back and an ingested delivery, export exactly the spool_* and
// rpc_server_* metrics the doc lists, with the documented types and
// labels. The server's is scraped with a read key, the least the doc says
// Prometheus needs.
func TestMetricsDocServer(t *testing.T) {
	t.Parallel()
	doc := readMetricsDoc(t)
	srv := spooltest.NewServer(t)
	c := newClient(t, srv)
	ctx := context.Background()

	// A real worker on its own queue runs the scatters' batches, with its
	// metrics in a registry of its own, as `spool worker --metrics-addr`.
	wm := telemetry.Must(telemetry.New())
	spooltest.NewWorker(t, srv, worker.Config{Queue: "batches", Meters: wm.Provider()})
	for _, script := range []string{"echo ok", "echo broken; exit 1"} {
		if _, err := c.StartScatter(ctx, client.ScatterParams{Job: client.SubmitParams{Queue: "batches", Script: script},
			Batches: []json.RawMessage{json.RawMessage(`[1]`)}}); err != nil {
			t.Fatal(err)
		}
	}

	// A job the test plays the worker of: enqueued, leased, output, done;
	// another, deleted once done.
	spooltest.RunJob(t, srv, spooltest.Seq(1, 3)...)
	if err := srv.Client().Delete(ctx, spooltest.RunJob(t, srv).ID); err != nil {
		t.Fatal(err)
	}

	// Work that cannot run, recorded failed from the start.
	if _, err := c.EnqueueJob(ctx, connect.NewRequest(&spoolv1.EnqueueJobRequest{RejectReason: "not a job spec"})); err != nil {
		t.Fatal(err)
	}

	// A stopping worker's hand-back.
	if _, _, err := c.Submit(ctx, client.SubmitParams{Queue: "handed-back", Argv: []string{"true"}}); err != nil {
		t.Fatal(err)
	}
	resp, err := c.DequeueJobs(ctx, connect.NewRequest(&spoolv1.DequeueJobsRequest{Queue: "handed-back", MaxJobs: 1, WaitSeconds: 5, WorkerId: "test"}))
	if err != nil || len(resp.Msg.GetLeases()) != 1 {
		t.Fatalf("lease: %v, %d leases", err, len(resp.Msg.GetLeases()))
	}
	if _, err := c.ReleaseJob(ctx, connect.NewRequest(&spoolv1.ReleaseJobRequest{TaskToken: resp.Msg.GetLeases()[0].GetTaskToken(), Reason: "stopping"})); err != nil {
		t.Fatal(err)
	}

	// A shipper's delivery, sent with a key of role ingest.
	lines := ingesttest.Lines(ingesttest.Line{Source: "api", ID: "1", Timestamp: 1, Message: "hello"})
	req, err := http.NewRequest(http.MethodPost, srv.URL+"/api/v1/ingest/lines", bytes.NewReader(lines))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+srv.Key(t, spool.RoleIngest))
	if code := statusOf(t, req); code != http.StatusOK {
		t.Fatalf("ingest delivery answered %d", code)
	}

	// The doc says a read key may scrape and a worker key may not.
	readKey := srv.Key(t, spool.RoleRead)
	if code := statusOf(t, metricsRequest(t, srv.URL, srv.Key(t, spool.RoleWorker))); code != http.StatusForbidden {
		t.Fatalf("a worker key scraping /metrics got %d, want 403 as docs/metrics.md says", code)
	}

	// Some figures come a moment later (the scatter driver's rounds, the
	// reaper's first sweep): scrape until every documented one is there.
	serverScrape := scrapeUntil(t, doc.of("server"), func() string {
		r := metricsRequest(t, srv.URL, readKey)
		res, err := http.DefaultClient.Do(r)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		body, _ := io.ReadAll(res.Body)
		if res.StatusCode != http.StatusOK {
			t.Fatalf("a read key scraping /metrics got %d: %s", res.StatusCode, body)
		}
		return string(body)
	})
	doc.check(t, "server", serverScrape)

	workerScrape := scrapeUntil(t, doc.of("worker"), func() string { return serve(wm) })
	doc.check(t, "worker", workerScrape)
}

// TestMetricsDocConsumer: the consumer's /metrics (spool consume
// --metrics-addr), after it refused a batch once and then committed it,
// exports exactly the spool_consumer_* metrics the doc lists.
func TestMetricsDocConsumer(t *testing.T) {
	t.Parallel()
	doc := readMetricsDoc(t)
	const topic = "jobs"
	cluster, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, topic))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cluster.Close)
	producer, err := kgo.NewClient(kgo.SeedBrokers(cluster.ListenAddrs()...))
	if err != nil {
		t.Fatal(err)
	}
	defer producer.Close()
	if err := producer.ProduceSync(context.Background(), &kgo.Record{Topic: topic, Value: []byte("make test")}).FirstErr(); err != nil {
		t.Fatal(err)
	}

	m := telemetry.Must(telemetry.New())
	var calls atomic.Int32
	cons, err := consumer.New(consumer.Config{
		Brokers: cluster.ListenAddrs(), Topic: topic, Group: "spool",
		BatchTimeout: 10 * time.Millisecond, RetryBackoff: 10 * time.Millisecond, MaxRetryBackoff: 50 * time.Millisecond,
		Meters: m.Provider(),
	}, func(context.Context, []consumer.Message) (bool, error) {
		// Refused once (the spool server away, say), so the batch is
		// redelivered; committed the second time. Batches of a
		// partition are handed over one at a time.
		return calls.Add(1) > 1, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cons.Run(context.Background()) }()
	defer func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := cons.Shutdown(ctx); err != nil {
			t.Errorf("consumer shutdown: %v", err)
		}
		<-done
	}()

	got := scrapeUntil(t, doc.of("consumer"), func() string { return serve(m) })
	doc.check(t, "consumer", got)
}

// docMetric is one row of the doc's tables.
type docMetric struct {
	typ    string
	labels []string
	line   int
}

type metricsDocRows map[string]docMetric

// docRowRE is a table row of a metric: | `name` | type | labels | meaning |.
// The labels cell names each label in backquotes ("—" for none).
var docRowRE = regexp.MustCompile("^\\| `([a-zA-Z_:][a-zA-Z0-9_:]*)` \\| (counter|gauge|histogram) \\| ([^|]*) \\|")

var backquotedRE = regexp.MustCompile("`([^`]+)`")

func readMetricsDoc(t *testing.T) metricsDocRows {
	t.Helper()
	f, err := os.Open(metricsDoc)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rows := metricsDocRows{}
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		m := docRowRE.FindStringSubmatch(sc.Text())
		if m == nil {
			continue
		}
		if prev, ok := rows[m[1]]; ok {
			t.Fatalf("%s: %s is listed twice (lines %d and %d)", metricsDoc, m[1], prev.line, n)
		}
		row := docMetric{typ: m[2], line: n}
		for _, l := range backquotedRE.FindAllStringSubmatch(m[3], -1) {
			row.labels = append(row.labels, l[1])
		}
		rows[m[1]] = row
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	// A doc whose table layout changed would otherwise pass with nothing
	// to compare.
	if len(rows) < 10 {
		t.Fatalf("%s: found only %d metric rows (| `name` | type | labels | meaning |); has the table layout changed?", metricsDoc, len(rows))
	}
	return rows
}

// processOf says whose /metrics a documented name is on: the worker's and
// the consumer's carry their own prefixes, the rest are the server's.
func processOf(name string) string {
	switch {
	case strings.HasPrefix(name, "spool_worker_"):
		return "worker"
	case strings.HasPrefix(name, "spool_consumer_"):
		return "consumer"
	}
	return "server"
}

// ours reports whether a scraped family is spool's own, which the doc must
// list: the Go runtime's, the process's and target_info are described
// there as groups and are not compared.
func ours(name string) bool {
	return strings.HasPrefix(name, "spool_") || strings.HasPrefix(name, "rpc_server_")
}

// of lists the documented names of process that a scrape must show.
func (d metricsDocRows) of(process string) []string {
	var names []string
	for name := range d {
		if processOf(name) == process && notScraped[name] == "" {
			names = append(names, name)
		}
	}
	sort.Strings(names)
	return names
}

// check compares a scrape of process with the doc: every metric of ours
// it exports is listed with its type and labels, and every metric the doc
// lists for process is exported.
func (d metricsDocRows) check(t *testing.T, process string, got map[string]family) {
	t.Helper()
	for _, name := range sortedKeys(got) {
		if !ours(name) {
			continue
		}
		f := got[name]
		row, ok := d[name]
		switch {
		case !ok:
			t.Errorf("the %s exports %s (%s, labels %v), which %s does not list", process, name, f.typ, sortedKeys(f.labels), metricsDoc)
			continue
		case processOf(name) != process:
			t.Errorf("the %s exports %s, which %s places on the %s's /metrics", process, name, metricsDoc, processOf(name))
		case row.typ != f.typ:
			t.Errorf("%s:%d says %s is a %s; the %s exports a %s", metricsDoc, row.line, name, row.typ, process, f.typ)
		}
		for _, l := range sortedKeys(f.labels) {
			if !slices.Contains(row.labels, l) {
				t.Errorf("the %s exports %s with label %s, which %s:%d does not list", process, name, l, metricsDoc, row.line)
			}
		}
	}
	for _, name := range d.of(process) {
		if _, ok := got[name]; !ok {
			t.Errorf("%s:%d lists %s, which the %s does not export", metricsDoc, d[name].line, name, process)
		}
	}
}

// family is one metric of a scrape: its type and the label names its
// series carry (le, the histogram's bucket bound, left out).
type family struct {
	typ    string
	labels map[string]bool
}

// scrapeUntil scrapes until every name in want is there, or ten seconds
// pass, and returns the last scrape. What is still missing then is the
// check's to report.
func scrapeUntil(t *testing.T, want []string, scrape func() string) map[string]family {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		got, err := parseExposition(scrape())
		if err != nil {
			t.Fatal(err)
		}
		missing := slices.ContainsFunc(want, func(n string) bool { _, ok := got[n]; return !ok })
		if !missing || time.Now().After(deadline) {
			return got
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// parseExposition reads the Prometheus text format: families from their
// # TYPE lines, label names from their series. A series is matched to its
// family by name, or for a histogram by its _bucket, _sum or _count name.
func parseExposition(text string) (map[string]family, error) {
	fams := map[string]family{}
	for line := range strings.Lines(text) {
		line = strings.TrimSpace(line)
		if rest, ok := strings.CutPrefix(line, "# TYPE "); ok {
			name, typ, _ := strings.Cut(rest, " ")
			fams[name] = family{typ: typ, labels: map[string]bool{}}
			continue
		}
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		name, labels, err := parseSeries(line)
		if err != nil {
			return nil, err
		}
		f, ok := fams[name]
		for _, suffix := range []string{"_bucket", "_sum", "_count"} {
			if base, cut := strings.CutSuffix(name, suffix); !ok && cut {
				f, ok = fams[base]
			}
		}
		if !ok {
			return nil, fmt.Errorf("series %q has no # TYPE line", line)
		}
		for _, l := range labels {
			if l != "le" {
				f.labels[l] = true
			}
		}
	}
	return fams, nil
}

// parseSeries splits `name{a="x",b="y"} 1` into the name and the label
// names, minding quoted values that hold commas, braces or escapes.
func parseSeries(line string) (string, []string, error) {
	i := strings.IndexAny(line, "{ ")
	if i < 0 {
		return "", nil, fmt.Errorf("no value in series %q", line)
	}
	name := line[:i]
	if line[i] != '{' {
		return name, nil, nil
	}
	var labels []string
	rest := line[i+1:]
	for {
		rest = strings.TrimLeft(rest, ", ")
		if strings.HasPrefix(rest, "}") {
			return name, labels, nil
		}
		eq := strings.Index(rest, "=\"")
		if eq < 0 {
			return "", nil, fmt.Errorf("bad labels in series %q", line)
		}
		labels = append(labels, rest[:eq])
		rest = rest[eq+2:]
		end := 0
		for end < len(rest) && rest[end] != '"' {
			if rest[end] == '\\' {
				end++
			}
			end++
		}
		if end >= len(rest) {
			return "", nil, fmt.Errorf("unterminated label value in series %q", line)
		}
		rest = rest[end+1:]
	}
}

func metricsRequest(t *testing.T, url, key string) *http.Request {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url+"/metrics", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+key)
	return req
}

func statusOf(t *testing.T, req *http.Request) int {
	t.Helper()
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, res.Body)
	res.Body.Close()
	return res.StatusCode
}

// serve is what a worker's or consumer's /metrics answers.
func serve(m *telemetry.Metrics) string {
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	return rec.Body.String()
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
