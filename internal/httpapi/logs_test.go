package httpapi_test

import (
	"encoding/base64"
	"fmt"
	"net/http"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/spool-run/spool/internal/httpapi"
	"github.com/spool-run/spool/server"
	"github.com/spool-run/spool/spooltest"
)

// Walks a 10,000-line log in pages of 1,000 while its worker is still
// writing it: every line comes exactly once, in order.
func TestLogPagesWhileWriting(t *testing.T) {
	t.Parallel()
	e := start(t)
	l, done := e.writingJob(t, 1, 10000, 100)
	seq := sequence{next: 1}
	after, pages := int64(0), 0
	for seq.next <= 10000 {
		finished := isClosed(done) // before the read: then the read sees every line
		var p httpapi.LogPage
		path := fmt.Sprintf("/api/v1/jobs/%s/logs?limit=1000&after_line=%d", l.JobID(), after)
		if resp := e.get(t, path, &p); resp.StatusCode != http.StatusOK {
			t.Fatalf("GET %s: %s", path, resp.Status)
		}
		pages++
		for _, ln := range p.Events {
			if err := seq.add(ln); err != nil {
				t.Fatalf("page after line %d: %v", after, err)
			}
		}
		pg := p.Pagination
		if pg.ReturnedCount != len(p.Events) || pg.Limit != 1000 || len(p.Events) > 1000 {
			t.Fatalf("pagination %+v with %d events", pg, len(p.Events))
		}
		if pg.HasMore && len(p.Events) != 1000 {
			t.Fatalf("has_more on a page of %d lines (limit 1000)", len(p.Events))
		}
		if pg.NextAfterLine != seq.next-1 || pg.TotalLines < pg.NextAfterLine {
			t.Fatalf("pagination %+v after line %d", pg, seq.next-1)
		}
		if p.State == "running" && !strings.HasSuffix(p.WebsocketURL, fmt.Sprintf("/api/v1/jobs/%s/logs/ws?last_line=%d", l.JobID(), pg.NextAfterLine)) {
			t.Fatalf("running job's websocket_url = %q", p.WebsocketURL)
		}
		after = pg.NextAfterLine
		if len(p.Events) == 0 {
			if finished {
				t.Fatalf("job finished and its log ends at line %d", seq.next-1)
			}
			time.Sleep(5 * time.Millisecond) // let the worker write more
		}
	}
	<-done
	t.Logf("10,000 lines in %d pages while writing", pages)
	var p httpapi.LogPage
	e.get(t, fmt.Sprintf("/api/v1/jobs/%s/logs?after_line=10000", l.JobID()), &p)
	if len(p.Events) != 0 || p.Pagination.HasMore || p.Pagination.TotalLines != 10000 || p.WebsocketURL != "" || p.State != "succeeded" {
		t.Fatalf("after the last line of the finished job: %+v", p)
	}
}

// The pagination object and bounds, on a finished job (no moving parts).
func TestLogPagination(t *testing.T) {
	t.Parallel()
	e := start(t)
	job := spooltest.RunJob(t, e.srv, spooltest.Seq(1, 2500)...)
	id := job.ID
	cases := []struct {
		query               string
		first, last         int64 // 0, 0: no lines
		hasMore             bool
		nextAfter, pageSize int64
	}{
		{"", 1, 1000, true, 1000, 1000},
		{"limit=10", 1, 10, true, 10, 10},
		{"after_line=2490", 2491, 2500, false, 2500, 1000},
		{"after_line=2500", 0, 0, false, 2500, 1000},
		{"after_line=9999", 0, 0, false, 9999, 1000},
		{"after_line=10&before_line=21", 11, 20, false, 20, 1000},
		{"after_line=10&before_line=11", 0, 0, false, 10, 1000},
		{"after_line=10&before_line=100&limit=5", 11, 15, true, 15, 5},
		{"before_line=101&limit=10", 91, 100, false, 100, 10},
		{"before_line=5&limit=10", 1, 4, false, 4, 10},
		{"before_line=9999", 0, 0, false, 8998, 1000}, // lines 8999-9998: none yet
		{"limit=100000", 1, 2500, false, 2500, httpapi.MaxLogLimit},
	}
	for _, tc := range cases {
		t.Run(tc.query, func(t *testing.T) {
			var p httpapi.LogPage
			if resp := e.get(t, "/api/v1/jobs/"+id+"/logs?"+tc.query, &p); resp.StatusCode != http.StatusOK {
				t.Fatalf("status %s", resp.Status)
			}
			var first, last int64
			if n := len(p.Events); n > 0 {
				first, last = p.Events[0].LineNumber, p.Events[n-1].LineNumber
				if int64(n) != last-first+1 {
					t.Fatalf("%d lines from %d to %d", n, first, last)
				}
			}
			pg := p.Pagination
			if first != tc.first || last != tc.last || pg.HasMore != tc.hasMore || pg.NextAfterLine != tc.nextAfter ||
				int64(pg.Limit) != tc.pageSize || pg.TotalLines != 2500 || pg.ReturnedCount != len(p.Events) {
				t.Fatalf("lines %d-%d, pagination %+v; want lines %d-%d, has_more %v, next_after_line %d, limit %d, total 2500",
					first, last, pg, tc.first, tc.last, tc.hasMore, tc.nextAfter, tc.pageSize)
			}
			if p.WebsocketURL != "" || p.State != "succeeded" || p.JobID != id {
				t.Fatalf("finished job's page: state %q, websocket_url %q, job_id %q", p.State, p.WebsocketURL, p.JobID)
			}
		})
	}
}

// since and until keep the lines written in their span, bounds included,
// and pages go on inside it as without them.
func TestLogPagesByTime(t *testing.T) {
	t.Parallel()
	e := start(t)
	t0 := time.Date(2026, 11, 27, 9, 0, 0, 0, time.UTC)
	lines := spooltest.Seq(1, 300)
	for i := range lines {
		lines[i].At = t0.Add(time.Duration(i) * time.Second) // line n at t0+(n-1)s
	}
	id := spooltest.RunJob(t, e.srv, lines...).ID
	at := func(line int) string { return lines[line-1].At.Format(time.RFC3339) }
	var got []int64
	after := int64(0)
	for pages := 0; ; pages++ {
		var p httpapi.LogPage
		path := fmt.Sprintf("/api/v1/jobs/%s/logs?since=%s&until=%s&limit=40&after_line=%d", id, at(101), at(200), after)
		if resp := e.get(t, path, &p); resp.StatusCode != http.StatusOK {
			t.Fatalf("GET %s: %s", path, resp.Status)
		}
		for _, ln := range p.Events {
			got = append(got, ln.LineNumber)
		}
		after = p.Pagination.NextAfterLine
		if !p.Pagination.HasMore {
			break
		}
		if pages > 10 {
			t.Fatal("pages go on past the end time")
		}
	}
	if len(got) != 100 || got[0] != 101 || got[99] != 200 {
		t.Fatalf("between lines 101 and 200's times: %d lines, %v…", len(got), got[:min(len(got), 5)])
	}
	// An offset given as %2B, and fractions of a second.
	var p httpapi.LogPage
	e.get(t, "/api/v1/jobs/"+id+"/logs?since=2026-11-27T10:04:58.5%2B01:00", &p)
	if len(p.Events) != 1 || p.Events[0].LineNumber != 300 {
		t.Fatalf("since line 300's time, half a second before, in another zone: %+v", p.Events)
	}
}

// Lines keep their stream, time, partial flag and exact bytes, also when
// those are not UTF-8.
func TestLogLineFields(t *testing.T) {
	t.Parallel()
	e := start(t)
	at := time.UnixMilli(1_700_000_000_123)
	job := spooltest.RunJob(t, e.srv,
		spooltest.Line{Text: "\x1b[32mok\x1b[0m <b>&", At: at},
		spooltest.Line{Text: "bad \xff\xfe bytes", Stderr: true, At: at},
		spooltest.Line{Text: "no newline", Partial: true, At: at},
	)
	var p httpapi.LogPage
	e.get(t, "/api/v1/jobs/"+job.ID+"/logs", &p)
	if len(p.Events) != 3 {
		t.Fatalf("%d lines, want 3", len(p.Events))
	}
	want := []httpapi.Line{
		{LineNumber: 1, Timestamp: at.UnixMilli(), Stream: "stdout", Text: "\x1b[32mok\x1b[0m <b>&", Attempt: 1},
		{LineNumber: 2, Timestamp: at.UnixMilli(), Stream: "stderr", Text: "bad \uFFFD bytes", TextBase64: base64.StdEncoding.EncodeToString([]byte("bad \xff\xfe bytes")), Attempt: 1},
		{LineNumber: 3, Timestamp: at.UnixMilli(), Stream: "stdout", Text: "no newline", Partial: true, Attempt: 1},
	}
	for i, w := range want {
		if p.Events[i] != w {
			t.Errorf("line %d = %+v, want %+v", i+1, p.Events[i], w)
		}
	}
}

// websocket_url is what the client can reach: the request's host, wss
// behind a TLS-terminating proxy.
func TestLogWebsocketURL(t *testing.T) {
	t.Parallel()
	e := start(t)
	l := e.running(t)
	l.Write(spooltest.Seq(1, 5)...)
	u := e.srv.URL + "/api/v1/jobs/" + l.JobID() + "/logs?limit=2"
	for _, tc := range []struct {
		hdr  http.Header
		want string
	}{
		{nil, strings.Replace(e.srv.URL, "http", "ws", 1)},
		{http.Header{"X-Forwarded-Proto": {"https"}, "X-Forwarded-Host": {"spool.example.com"}}, "wss://spool.example.com"},
		{http.Header{"X-Forwarded-Proto": {"https, http"}}, "wss://" + strings.TrimPrefix(e.srv.URL, "http://")},
	} {
		var p httpapi.LogPage
		e.do(t, http.MethodGet, u, tc.hdr, &p)
		want := tc.want + "/api/v1/jobs/" + l.JobID() + "/logs/ws?last_line=2"
		if p.WebsocketURL != want {
			t.Errorf("with %v: websocket_url = %q, want %q", tc.hdr, p.WebsocketURL, want)
		}
	}
}

// A page of long lines ends at the page's byte budget, before the limit,
// and says there is more; walking on gets every line.
func TestLogPageByteBudget(t *testing.T) {
	httpapi.SetTestHooks(t, httpapi.TestHooks{PageBytes: 10 << 10})
	e := start(t)
	long := strings.Repeat("z", 1000)
	lines := make([]spooltest.Line, 300)
	for i := range lines {
		lines[i].Text = long
	}
	job := spooltest.RunJob(t, e.srv, lines...)
	var got, pages int64
	for after := int64(0); ; {
		pages++
		var p httpapi.LogPage
		e.do(t, http.MethodGet, fmt.Sprintf("%s/api/v1/jobs/%s/logs?after_line=%d&limit=100", e.srv.URL, job.ID, after), nil, &p)
		if len(p.Events) > 10 || (p.Pagination.HasMore && len(p.Events) < 10) {
			t.Fatalf("page after line %d: %d lines of 1000 bytes with a budget of 10 KiB, has_more %v", after, len(p.Events), p.Pagination.HasMore)
		}
		for _, l := range p.Events {
			if l.LineNumber != got+1 || l.Text != long {
				t.Fatalf("line %d after %d", l.LineNumber, got)
			}
			got++
		}
		after = p.Pagination.NextAfterLine
		if !p.Pagination.HasMore {
			break
		}
	}
	if got != 300 || pages != 30 {
		t.Errorf("%d lines in %d pages, want 300 in 30", got, pages)
	}
}

// A short page of a log stored in large batches reads what it needs: a
// page of 5 lines of 1,000 bytes from batches of 250 lines (250 KB each)
// costs about the batch that holds them, not a store page of them.
func TestLogPageReadsWhatItNeeds(t *testing.T) {
	srv := spooltest.NewServer(t, spooltest.Config{Server: func(c *server.Config) { c.Execution.Batching.MaxBatchSize = 250 }})
	e := &env{srv: srv, c: srv.Client()}
	const batches, perBatch, width = 130, 250, 1000
	lines := make([]spooltest.Line, batches*perBatch)
	for i := range lines {
		lines[i].Text = fmt.Sprintf("%-*d", width, i+1)
	}
	job := spooltest.RunJob(t, srv, lines...)
	path := fmt.Sprintf("/api/v1/jobs/%s/logs?limit=5&after_line=1000", job.ID)
	page := func() httpapi.LogPage {
		var p httpapi.LogPage
		if resp := e.get(t, path, &p); resp.StatusCode != http.StatusOK {
			t.Fatalf("GET %s: %s", path, resp.Status)
		}
		return p
	}
	page() // the first request also fills the server's pools
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	p := page()
	runtime.ReadMemStats(&after)
	allocated := after.TotalAlloc - before.TotalAlloc
	if len(p.Events) != 5 || p.Events[0].LineNumber != 1001 || !p.Pagination.HasMore {
		t.Fatalf("page: %d lines from %d, has_more %v", len(p.Events), p.Events[0].LineNumber, p.Pagination.HasMore)
	}
	// The batch holding lines 1001-1005 is 250 KB of output, decoded from
	// its stored form and unpacked to lines; reading a store page of 128
	// such batches costs over 64 MB.
	const batchBytes = perBatch * width
	t.Logf("a page of 5 lines allocated %.1f MiB", float64(allocated)/(1<<20))
	if allocated > 8*batchBytes {
		t.Errorf("a page of 5 lines allocated %.1f MiB: more than the few batches it needs (%d KB each)", float64(allocated)/(1<<20), batchBytes/1000)
	}
}

// A page asked for with wait answers with the lines stored while it
// waited, and, when none come before the wait passes, with no lines and
// the same cursor; a wait of a finished job's log answers at once. How
// the wait ends otherwise (the job ending, the client leaving, the server
// draining) is the service's to test.
func TestLogPageWait(t *testing.T) {
	t.Parallel()
	e := start(t)
	l := e.running(t)
	l.Write(spooltest.Seq(1, 3)...)
	path := fmt.Sprintf("/api/v1/jobs/%s/logs?after_line=3&wait=", l.JobID())

	var p httpapi.LogPage
	if resp := e.get(t, path+"0.05", &p); resp.StatusCode != http.StatusOK || len(p.Events) != 0 || p.Pagination.NextAfterLine != 3 || p.State != "running" {
		t.Fatalf("a wait with nothing new: %s, %d lines, next_after_line %d, %s", resp.Status, len(p.Events), p.Pagination.NextAfterLine, p.State)
	}

	got := make(chan error, 1)
	go func() { got <- e.getPage(path+"30s", &p) }()
	l.Write(spooltest.Seq(4, 5)...)
	if err := <-got; err != nil {
		t.Fatal(err)
	}
	if len(p.Events) != 2 || p.Events[0].LineNumber != 4 || p.Events[1].LineNumber != 5 || p.Pagination.NextAfterLine != 5 {
		t.Fatalf("a wait while lines 4 and 5 were written: %+v", p)
	}

	l.End(0)
	go func() { got <- e.getPage(fmt.Sprintf("/api/v1/jobs/%s/logs?after_line=5&wait=30s", l.JobID()), &p) }()
	select {
	case err := <-got:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("a wait for more of a finished job's log did not answer")
	}
	if p.State != "succeeded" || len(p.Events) != 0 {
		t.Fatalf("a wait for more of a finished job's log: %s, %d lines", p.State, len(p.Events))
	}
}

// getPage is get for a goroutine other than the test's: it returns what
// went wrong instead of failing the test.
func (e *env) getPage(path string, p *httpapi.LogPage) error {
	req, err := http.NewRequest(http.MethodGet, e.srv.URL+path, nil)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+e.srv.AdminKey)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s", path, resp.Status)
	}
	return jsonDecode(resp, p)
}
