package httpapi_test

import (
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/spool-run/spool"
	"github.com/spool-run/spool/client"
	"github.com/spool-run/spool/internal/httpapi"
	"github.com/spool-run/spool/spooltest"
)

// searchPath is the search of job's log for q with more parameters.
func searchPath(jobID, q, more string) string {
	p := "/api/v1/jobs/" + jobID + "/logs/search?q=" + url.QueryEscape(q)
	if more != "" {
		p += "&" + more
	}
	return p
}

func matchNumbers(s httpapi.LogSearch) []int64 {
	var out []int64
	for _, l := range s.Matches {
		out = append(out, l.LineNumber)
	}
	return out
}

// A search finds the lines that contain the text, in either case or only
// the one given, through colour codes, and returns them as the log pages
// do.
func TestLogSearch(t *testing.T) {
	t.Parallel()
	e := start(t)
	at := time.UnixMilli(1_700_000_000_123)
	job := spooltest.RunJob(t, e.srv,
		spooltest.Line{Text: "compiling", At: at},                                     // 1
		spooltest.Line{Text: "\x1b[31mError\x1b[0m: disk full", Stderr: true, At: at}, // 2
		spooltest.Line{Text: "no errors here", At: at},                                // 3
		spooltest.Line{Text: "\x1b[1mE\x1b[0mRROR in step 2", At: at},                 // 4
		spooltest.Line{Text: "bad \xff error bytes", At: at},                          // 5
		spooltest.Line{Text: "partial error ", Partial: true, At: at},                 // 6
		spooltest.Line{Text: "done", At: at},                                          // 7
	)
	id := job.ID
	for _, tc := range []struct {
		q, more string
		want    []int64
	}{
		{"error", "", []int64{2, 3, 4, 5, 6}},
		{"error", "case=insensitive", []int64{2, 3, 4, 5, 6}},
		{"Error", "case=sensitive", []int64{2}},
		{"ERROR in", "case=sensitive", []int64{4}},
		{"error: disk", "", []int64{2}},
		{"[31m", "", nil},
		{"error", "after_line=3", []int64{4, 5, 6}},
		{"error", "after_line=7", nil},
		{"nothing like it", "", nil},
	} {
		var s httpapi.LogSearch
		if resp := e.get(t, searchPath(id, tc.q, tc.more), &s); resp.StatusCode != http.StatusOK {
			t.Fatalf("search %q %s: %s", tc.q, tc.more, resp.Status)
		}
		after := int64(0)
		fmt.Sscanf(tc.more, "after_line=%d", &after)
		if got := matchNumbers(s); !slices.Equal(got, tc.want) || s.HasMore || s.ScanLimitReached || s.NextAfterLine != max(7, after) {
			t.Errorf("search %q %s: lines %v, has_more %v, scan_limit_reached %v, next_after_line %d; want lines %v and the whole log searched",
				tc.q, tc.more, got, s.HasMore, s.ScanLimitReached, s.NextAfterLine, tc.want)
		}
		if s.JobID != id || s.State != "succeeded" || s.Query != tc.q || s.CaseSensitive != strings.Contains(tc.more, "=sensitive") ||
			s.TotalLines != 7 || s.Limit != 100 || s.Matches == nil {
			t.Errorf("search %q %s: %+v", tc.q, tc.more, s)
		}
	}

	// The matches are the lines as a page of the log has them.
	var s httpapi.LogSearch
	e.get(t, searchPath(id, "error", ""), &s)
	var p httpapi.LogPage
	e.get(t, "/api/v1/jobs/"+id+"/logs", &p)
	for _, m := range s.Matches {
		if want := p.Events[m.LineNumber-1]; m != want {
			t.Errorf("match %+v; the log page has %+v", m, want)
		}
	}
}

// Matches come a page at a time: each page ends at its limit and says
// where to go on; the pages together are every match once.
func TestLogSearchPages(t *testing.T) {
	t.Parallel()
	e := start(t)
	job := spooltest.RunJob(t, e.srv, spooltest.Seq(1, 3000)...)
	var got []int64
	after, calls := int64(0), 0
	for {
		var s httpapi.LogSearch
		e.get(t, searchPath(job.ID, "7", fmt.Sprintf("after_line=%d&limit=200", after)), &s)
		calls++
		if len(s.Matches) > 200 || (s.HasMore && len(s.Matches) != 200) || s.Limit != 200 || s.ScanLimitReached {
			t.Fatalf("after %d: %d matches, %+v", after, len(s.Matches), s)
		}
		got = append(got, matchNumbers(s)...)
		after = s.NextAfterLine
		if !s.HasMore {
			break
		}
	}
	var want []int64
	for i := int64(1); i <= 3000; i++ {
		if strings.Contains(fmt.Sprint(i), "7") {
			want = append(want, i)
		}
	}
	if !slices.Equal(got, want) || after != 3000 || calls != (len(want)+199)/200 {
		t.Errorf("%d calls found %d lines, ending after %d; want the %d lines with a 7 in %d calls", calls, len(got), after, len(want), (len(want)+199)/200)
	}
	var s httpapi.LogSearch
	e.get(t, searchPath(job.ID, "1", "limit=5000"), &s)
	if len(s.Matches) != httpapi.MaxSearchLimit || s.Limit != httpapi.MaxSearchLimit || !s.HasMore {
		t.Errorf("limit=5000: %d matches, limit %d, has_more %v; want %d and more", len(s.Matches), s.Limit, s.HasMore, httpapi.MaxSearchLimit)
	}
}

// On a log longer than one call may scan, each call stops at its scan
// limit and says so; going on from where it stopped finds every match, in
// calls that found nothing too.
func TestLogSearchScanLimit(t *testing.T) {
	httpapi.SetTestHooks(t, httpapi.TestHooks{SearchScanLines: 1000})
	e := start(t)
	lines := spooltest.Seq(1, 10_000)
	for _, n := range []int{5, 2500, 2501, 9999} {
		lines[n-1].Text = fmt.Sprintf("needle %d", n)
	}
	job := spooltest.RunJob(t, e.srv, lines...)
	var got []int64
	after, calls, stopped := int64(0), 0, 0
	for {
		var s httpapi.LogSearch
		e.get(t, searchPath(job.ID, "NEEDLE", fmt.Sprintf("after_line=%d", after)), &s)
		calls++
		if s.NextAfterLine != after+1000 {
			t.Fatalf("call %d after %d: next_after_line %d; want it to scan 1000 lines", calls, after, s.NextAfterLine)
		}
		if s.ScanLimitReached {
			stopped++
		}
		got = append(got, matchNumbers(s)...)
		after = s.NextAfterLine
		if !s.HasMore {
			break
		}
	}
	if !slices.Equal(got, []int64{5, 2500, 2501, 9999}) || calls != 10 || stopped != 9 {
		t.Errorf("%d calls (%d stopped at the scan limit) found %v; want 10 calls, 9 stopped, lines 5, 2500, 2501, 9999", calls, stopped, got)
	}
}

// Who may search and download a log: as for the log itself, a key of a
// worker of another queue does not see the job at all.
func TestLogSearchAndRawAccess(t *testing.T) {
	t.Parallel()
	e := start(t)
	if _, _, err := e.c.Submit(t.Context(), client.SubmitParams{Queue: "builds", Argv: []string{"make"}}); err != nil {
		t.Fatal(err)
	}
	l := spooltest.LeaseJob(t, e.srv, "builds")
	l.Begin()
	l.Write(spooltest.Seq(1, 10)...)
	l.End(0)
	other, own := e.srv.Key(t, spool.RoleWorker, "other"), e.srv.Key(t, spool.RoleWorker, "builds")
	for _, path := range []string{searchPath(l.JobID(), "1", ""), "/api/v1/jobs/" + l.JobID() + "/logs/raw"} {
		for key, want := range map[string]int{other: http.StatusNotFound, own: http.StatusOK, "": http.StatusUnauthorized} {
			hdr := http.Header{"Authorization": {"Bearer " + key}}
			if key == "" {
				hdr = http.Header{"Authorization": {""}}
			}
			resp := e.do(t, http.MethodGet, e.srv.URL+path, hdr, nil)
			if resp.StatusCode != want {
				t.Errorf("GET %s with a key of queues %q: %s, want %d", path, map[string]string{other: "other", own: "builds", "": "(none)"}[key], resp.Status, want)
			}
		}
	}
}

// The raw log is the output as written: stdout and stderr interleaved as
// read, a newline after each line but a partial one, bytes as they are.
// It is a download named after the job.
func TestRawLog(t *testing.T) {
	t.Parallel()
	e := start(t)
	lines := []spooltest.Line{
		{Text: "\x1b[1mbuilding\x1b[0m"},
		{Text: "warning: deprecated", Stderr: true},
		{Text: "a line longer than a batch, "},
		{Text: "in two pieces"},
		{Text: "bad \xff\xfe bytes"},
		{Text: ""},
		{Text: "error: failed", Stderr: true},
		{Text: "Continue? [y/N] ", Partial: true},
	}
	lines[2].Partial = true
	lines = append(lines, spooltest.Seq(1, 20_000)...) // more than a write buffer: streamed
	job := spooltest.RunJob(t, e.srv, lines...)
	var w strings.Builder
	w.WriteString("\x1b[1mbuilding\x1b[0m\nwarning: deprecated\na line longer than a batch, in two pieces\nbad \xff\xfe bytes\n\nerror: failed\nContinue? [y/N] ")
	for i := 1; i <= 20_000; i++ {
		fmt.Fprintf(&w, "%d\n", i)
	}
	want := w.String()
	resp, body := e.raw(t, job.ID)
	if resp.StatusCode != http.StatusOK || body != want {
		t.Fatalf("%s, %d bytes (%.80q…); want 200 and the %d bytes written", resp.Status, len(body), body, len(want))
	}
	for k, v := range map[string]string{
		"Content-Type":        "text/plain; charset=utf-8",
		"Content-Disposition": `attachment; filename="` + job.ID + `.log"`,
		"Cache-Control":       "no-store",
	} {
		if got := resp.Header.Get(k); got != v {
			t.Errorf("%s: %q, want %q", k, got, v)
		}
	}
	if resp.ContentLength != -1 || !slices.Equal(resp.TransferEncoding, []string{"chunked"}) {
		t.Errorf("Content-Length %d, Transfer-Encoding %v: the log was not streamed", resp.ContentLength, resp.TransferEncoding)
	}

	// HEAD: the headers alone.
	head := e.do(t, http.MethodHead, e.srv.URL+"/api/v1/jobs/"+job.ID+"/logs/raw", nil, nil)
	if head.StatusCode != http.StatusOK || head.Header.Get("Content-Disposition") == "" {
		t.Errorf("HEAD: %s %v", head.Status, head.Header)
	}

	// A running job: what is stored so far.
	l := e.running(t)
	resp, body = e.raw(t, l.JobID())
	if resp.StatusCode != http.StatusOK || body != "" {
		t.Errorf("before any output: %s %q", resp.Status, body)
	}
	l.Write(spooltest.Line{Text: "first"}, spooltest.Line{Text: "second, so far", Partial: true})
	if _, body = e.raw(t, l.JobID()); body != "first\nsecond, so far" {
		t.Errorf("while running: %q", body)
	}
	l.Write(spooltest.Line{Text: " and on"})
	l.End(0)
	if _, body = e.raw(t, l.JobID()); body != "first\nsecond, so far and on\n" {
		t.Errorf("finished: %q", body)
	}

	// Unknown jobs are JSON errors like every other.
	var eb errorBody
	resp = e.get(t, "/api/v1/jobs/01900000-0000-7000-8000-000000000000/logs/raw", &eb)
	if resp.StatusCode != http.StatusNotFound || resp.Header.Get("Content-Type") != "application/json" || resp.Header.Get("Content-Disposition") != "" ||
		!strings.Contains(eb.Error, "not found") {
		t.Errorf("unknown job: %s %q %q", resp.Status, resp.Header.Get("Content-Type"), eb.Error)
	}
}

// raw downloads a job's raw log with the admin key.
func (e *env) raw(t *testing.T, jobID string) (*http.Response, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, e.srv.URL+"/api/v1/jobs/"+jobID+"/logs/raw", nil)
	req.Header.Set("Authorization", "Bearer "+e.srv.AdminKey)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("reading the raw log: %v", err)
	}
	return resp, string(b)
}
