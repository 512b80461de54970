package service

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/spool-run/spool"
	spoolv1 "github.com/spool-run/spool/gen/spool/v1"
	"github.com/spool-run/spool/internal/config"
	"github.com/spool-run/spool/internal/events"
	"github.com/spool-run/spool/internal/logsearch"
	"github.com/spool-run/spool/internal/store"
	"github.com/spool-run/spool/internal/store/backends/memstore"
)

// logStore is a core over an in-memory store, without keys (the REST tests
// check who may search), and a way to give it jobs with known logs.
type logStore struct {
	s   *Service
	st  store.JobStore
	ctx context.Context
}

func newLogStore(t *testing.T) *logStore {
	t.Helper()
	return newLogStoreOn(t, memstore.New())
}

// newLogStoreOn is newLogStore over st.
func newLogStoreOn(t *testing.T, st store.JobStore) *logStore {
	t.Helper()
	cfg := config.Default()
	cfg.Auth.Disabled = true
	cfg.Execution.Batching.MaxBatchSize = 100
	return &logStore{s: New(Options{Store: st, Config: cfg}), st: st,
		ctx: WithCredentials(context.Background(), Credentials{Host: "localhost"})}
}

// job stores a job whose log is lines (in batches of the configured size),
// finished unless running.
func (ls *logStore) job(t *testing.T, lines []events.Line, running bool) string {
	t.Helper()
	return ls.lease(t, lines, running).JobID
}

// lease is job, returning the job's lease, whose attempt can go on
// writing (from the sequence after lines) while the job runs.
func (ls *logStore) lease(t *testing.T, lines []events.Line, running bool) store.Lease {
	t.Helper()
	ctx := context.Background()
	queue := fmt.Sprintf("q%d", time.Now().UnixNano())
	if _, _, err := ls.st.Enqueue(ctx, store.NewJob{Queue: queue, Params: &spoolv1.JobParams{Argv: []string{"make"}},
		Execution: ls.s.cfg.ExecutionConfig(), MaxAttempts: 1}); err != nil {
		t.Fatal(err)
	}
	leases, err := ls.st.Dequeue(ctx, store.DequeueRequest{Queue: queue, Max: 1, LeaseDuration: time.Minute})
	if err != nil || len(leases) != 1 {
		t.Fatalf("dequeue: %v, %d leases", err, len(leases))
	}
	l := leases[0]
	seq := l.Head.NextSequence
	for len(lines) > 0 {
		n := min(len(lines), ls.s.cfg.Execution.Batching.MaxBatchSize)
		if _, err := ls.st.Append(ctx, l.LeaseRef, events.Messages(events.Batch{Sequence: seq, Lines: lines[:n]}.Event())); err != nil {
			t.Fatal(err)
		}
		seq += int64(n)
		lines = lines[n:]
	}
	if !running {
		if _, err := ls.st.Complete(ctx, l.LeaseRef, &spoolv1.JobResult{ExitCode: 0}); err != nil {
			t.Fatal(err)
		}
	}
	return l
}

func textLines(texts ...string) []events.Line {
	return events.TextLines(time.UnixMilli(1_700_000_000_000), texts...)
}

// numbered is lines "line 1".."line n", with "error N" every tenth line
// (N its number) and "ERROR" in the ones ending in 5.
func numbered(n int) []events.Line {
	var texts []string
	for i := 1; i <= n; i++ {
		switch {
		case i%10 == 0:
			texts = append(texts, fmt.Sprintf("line %d: error %d", i, i))
		case i%10 == 5:
			texts = append(texts, fmt.Sprintf("line %d: ERROR", i))
		default:
			texts = append(texts, fmt.Sprintf("line %d", i))
		}
	}
	return textLines(texts...)
}

func lineNumbers(evs []*spoolv1.JobEvent) []int64 {
	var out []int64
	for _, ev := range evs {
		out = append(out, ev.GetOutputData().GetLineNumber())
	}
	return out
}

// What matches: the shown text of a line, in either case unless asked,
// colour codes and other escape sequences left out.
func TestSearchMatches(t *testing.T) {
	ls := newLogStore(t)
	id := ls.job(t, textLines(
		"build started",                              // 1
		"\x1b[31mFAIL\x1b[0med: 3 tests",             // 2: a word split by colours
		"ok: no failures",                            // 3
		"\x1b]8;;https://example.com/fail\x1b\\docs", // 4: the word is in a hyperlink's address, not shown
		"progress 10%\r\x1b[Kprogress 20%",           // 5
		"tab\tseparated",                             // 6
		"GRÖSSE Ärger",                               // 7
		"bell\x07 rings",                             // 8
		"bad \xff bytes fail",                        // 9
	), false)
	for _, tc := range []struct {
		q             string
		caseSensitive bool
		want          []int64
	}{
		{"fail", false, []int64{2, 3, 9}},
		{"FAIL", true, []int64{2}},
		{"failed: 3", false, []int64{2}},
		{"31m", false, nil},
		{"example", false, nil},
		{"docs", false, []int64{4}},
		{"progress 20%", false, []int64{5}},
		{"10%progress", false, nil}, // no match across a carriage return
		{"tab\tsep", false, []int64{6}},
		{"ärger", false, []int64{7}},
		{"ärger", true, nil},
		{"grösse", false, []int64{7}},
		{"bell rings", false, []int64{8}},
		{"bad ", true, []int64{9}},
	} {
		res, err := ls.s.SearchLog(ls.ctx, logsearch.Request{JobID: id, Query: tc.q, CaseSensitive: tc.caseSensitive})
		if err != nil {
			t.Fatalf("%q: %v", tc.q, err)
		}
		if got := lineNumbers(res.Matches); !slices.Equal(got, tc.want) || res.HasMore || res.ScanStopped || res.NextAfter != 9 {
			t.Errorf("search %q (case-sensitive %v): lines %v, has_more %v, scan stopped %v, next after %d; want lines %v, the whole log searched",
				tc.q, tc.caseSensitive, got, res.HasMore, res.ScanStopped, res.NextAfter, tc.want)
		}
	}
	// A match is the line as ReadLines gives it.
	res, _ := ls.s.SearchLog(ls.ctx, logsearch.Request{JobID: id, Query: "failed"})
	page, _ := ls.s.ReadLines(ls.ctx, LinesRequest{JobID: id, After: 1, Limit: 1})
	if len(res.Matches) != 1 || len(page.Lines) != 1 || res.Matches[0].String() != page.Lines[0].String() {
		t.Errorf("match %v; ReadLines gives %v", res.Matches, page.Lines)
	}
}

// Pages of matches: each ends at its limit, says where to go on, and the
// pages together are every match once.
func TestSearchPages(t *testing.T) {
	ls := newLogStore(t)
	id := ls.job(t, numbered(1000), false)
	var all []int64
	after, calls := int64(0), 0
	for {
		res, err := ls.s.SearchLog(ls.ctx, logsearch.Request{JobID: id, Query: "error", After: after, Limit: 30})
		if err != nil {
			t.Fatal(err)
		}
		calls++
		got := lineNumbers(res.Matches)
		if len(got) > 30 || (res.HasMore && len(got) != 30) || res.ScanStopped || res.Limit != 30 {
			t.Fatalf("after %d: %d matches, has_more %v, scan stopped %v, limit %d", after, len(got), res.HasMore, res.ScanStopped, res.Limit)
		}
		// The next call starts just before the match this one left.
		if n := len(got); res.HasMore && n > 0 && res.NextAfter != got[n-1]+4 {
			t.Fatalf("after %d: last match %d, next after %d; want just before the next match", after, got[n-1], res.NextAfter)
		}
		all = append(all, got...)
		after = res.NextAfter
		if !res.HasMore {
			break
		}
	}
	var want []int64
	for i := int64(5); i <= 1000; i += 5 {
		want = append(want, i)
	}
	if !slices.Equal(all, want) || calls != 7 || after != 1000 {
		t.Errorf("%d calls found %v, ending after %d; want every 5th line in 7 calls, ending after 1000", calls, all, after)
	}

	res, _ := ls.s.SearchLog(ls.ctx, logsearch.Request{JobID: id, Query: "error", Limit: 5000})
	if len(res.Matches) != 200 || res.Limit != logsearch.MaxMatches {
		t.Errorf("limit 5000: %d matches, limit %d; want 200, %d", len(res.Matches), res.Limit, logsearch.MaxMatches)
	}
	res, _ = ls.s.SearchLog(ls.ctx, logsearch.Request{JobID: id, Query: "error"})
	if len(res.Matches) != logsearch.DefaultMatches || !res.HasMore || res.Limit != logsearch.DefaultMatches {
		t.Errorf("no limit: %d matches, has_more %v, limit %d", len(res.Matches), res.HasMore, res.Limit)
	}
	res, _ = ls.s.SearchLog(ls.ctx, logsearch.Request{JobID: id, Query: "error", After: 5000})
	if len(res.Matches) != 0 || res.HasMore || res.NextAfter != 5000 {
		t.Errorf("after the end: %+v", res)
	}
}

// A call scans at most its budget of lines, then says how far it got; the
// calls together find every match. A budget that ends on the last line of
// a finished log has searched it all; on a running log the next call may
// find more.
func TestSearchScanBudget(t *testing.T) {
	ls := newLogStore(t)
	id := ls.job(t, numbered(10_000), false)
	var all []int64
	after, calls := int64(0), 0
	for {
		res, err := ls.s.SearchLog(ls.ctx, logsearch.Request{JobID: id, Query: "error 99", After: after, ScanLines: 1000})
		if err != nil {
			t.Fatal(err)
		}
		calls++
		if res.NextAfter != after+1000 || res.ScanStopped != (res.NextAfter < 10_000) || res.HasMore != res.ScanStopped {
			t.Fatalf("call %d after %d: next after %d, scan stopped %v, has_more %v", calls, after, res.NextAfter, res.ScanStopped, res.HasMore)
		}
		all = append(all, lineNumbers(res.Matches)...)
		after = res.NextAfter
		if !res.HasMore {
			break
		}
	}
	if want := []int64{990, 9900, 9910, 9920, 9930, 9940, 9950, 9960, 9970, 9980, 9990}; !slices.Equal(all, want) || calls != 10 {
		t.Errorf("%d calls found %v; want %v in 10", calls, all, want)
	}

	// The byte budget: lines of 100 bytes, 10 KiB a call.
	long := make([]string, 500)
	for i := range long {
		long[i] = fmt.Sprintf("%-100d", i+1)
	}
	id = ls.job(t, textLines(long...), false)
	res, err := ls.s.SearchLog(ls.ctx, logsearch.Request{JobID: id, Query: "nothing", ScanBytes: 10 << 10})
	if err != nil || res.NextAfter != 103 || !res.ScanStopped || !res.HasMore {
		t.Errorf("10 KiB of 100-byte lines: %+v, %v; want lines 1-103 scanned, stopped", res, err)
	}

	// Running: the budget ends on the last stored line, and more may come.
	id = ls.job(t, numbered(100), true)
	res, err = ls.s.SearchLog(ls.ctx, logsearch.Request{JobID: id, Query: "error", ScanLines: 100})
	if err != nil || len(res.Matches) != 20 || !res.HasMore || !res.ScanStopped || res.NextAfter != 100 {
		t.Errorf("running job: %+v, %v", res, err)
	}
	res, err = ls.s.SearchLog(ls.ctx, logsearch.Request{JobID: id, Query: "error", After: 100})
	if err != nil || len(res.Matches) != 0 || res.HasMore || res.NextAfter != 100 {
		t.Errorf("running job after its last line: %+v, %v", res, err)
	}
}

// Requests the core refuses, and a job it does not have.
func TestSearchBadRequests(t *testing.T) {
	ls := newLogStore(t)
	id := ls.job(t, numbered(10), false)
	for _, tc := range []struct {
		r       logsearch.Request
		mention string
	}{
		{logsearch.Request{JobID: id}, "q is required"},
		{logsearch.Request{JobID: id, Query: strings.Repeat("x", 1001)}, "at most 1000"},
		{logsearch.Request{JobID: id, Query: "a\x1b[31m"}, "control characters"},
		{logsearch.Request{JobID: id, Query: "a\nb"}, "control characters"},
		{logsearch.Request{JobID: id, Query: "\xff"}, "UTF-8"},
		{logsearch.Request{JobID: id, Query: "x", After: -1}, "negative"},
		{logsearch.Request{JobID: id, Query: "x", Limit: -1}, "negative"},
		{logsearch.Request{JobID: id, Query: "x", After: MaxLine + 1}, "line numbers go up to"},
	} {
		_, err := ls.s.SearchLog(ls.ctx, tc.r)
		if !errors.Is(err, spool.ErrInvalidArgument) || !strings.Contains(err.Error(), tc.mention) {
			t.Errorf("%+v: %v; want invalid, mentioning %q", tc.r, err, tc.mention)
		}
	}
	if _, err := ls.s.SearchLog(ls.ctx, logsearch.Request{JobID: "01900000-0000-7000-8000-000000000000", Query: "x"}); !errors.Is(err, spool.ErrNotFound) {
		t.Errorf("unknown job: %v", err)
	}
	if _, err := ls.s.SearchLog(ls.ctx, logsearch.Request{JobID: id, Query: strings.Repeat("é", 500)}); err != nil {
		t.Errorf("a query of 1000 bytes: %v", err)
	}
	if _, err := ls.s.OpenRawLog(ls.ctx, "01900000-0000-7000-8000-000000000000"); !errors.Is(err, spool.ErrNotFound) {
		t.Errorf("raw log of an unknown job: %v", err)
	}
}

// The raw log is the output as written: stdout and stderr in the order
// read, a newline after each line but the pieces of a longer one, and none
// after output that ended without one.
func TestRawLog(t *testing.T) {
	ls := newLogStore(t)
	lines := textLines("one", "two \x1b[31mred\x1b[0m", "", "bad \xff bytes", "a long line, ", "in pieces", "err", "prompt> ")
	lines[4].Partial = true
	lines[6].Stream = spoolv1.StreamType_STREAM_TYPE_STDERR
	lines[7].Partial = true
	// Enough lines that the log is read in several stored pages.
	lines = append(lines, numbered(5000)...)
	lines = append(lines, textLines("the end")...)
	lines[len(lines)-1].Partial = true
	id := ls.job(t, lines, false)
	raw, err := ls.s.OpenRawLog(ls.ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	var got bytes.Buffer
	n, err := raw.Copy(ls.ctx, &got)
	if err != nil {
		t.Fatal(err)
	}
	var want bytes.Buffer
	want.WriteString("one\ntwo \x1b[31mred\x1b[0m\n\nbad \xff bytes\na long line, in pieces\nerr\nprompt> ")
	for _, l := range numbered(5000) {
		want.Write(l.Data)
		want.WriteByte('\n')
	}
	want.WriteString("the end")
	if !bytes.Equal(got.Bytes(), want.Bytes()) || n != int64(want.Len()) {
		t.Errorf("raw log: %d bytes (said %d), want %d; starts %q", got.Len(), n, want.Len(), got.Bytes()[:min(80, got.Len())])
	}
	if raw.Job().GetJobId() != id {
		t.Errorf("job %q", raw.Job().GetJobId())
	}
}
