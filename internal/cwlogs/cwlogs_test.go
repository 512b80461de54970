package cwlogs_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudwatchlogs"
	"github.com/aws/aws-sdk-go-v2/service/cloudwatchlogs/types"

	"github.com/spool-run/spool/internal/cwlogs"
	"github.com/spool-run/spool/internal/ingest"
	"github.com/spool-run/spool/internal/mototest"
)

// TestCloudWatchLogs runs the tests that read CloudWatch Logs, on one
// moto_server.
func TestCloudWatchLogs(t *testing.T) {
	endpoint := mototest.For(t).URL
	mototest.SetEnv(t)
	cw, err := cwlogs.NewClient(t.Context(), cwlogs.Config{Endpoint: endpoint})
	if err != nil {
		t.Fatal(err)
	}
	for name, test := range map[string]func(*testing.T, *cloudwatchlogs.Client){
		"Read": testRead, "ReadBounds": testReadBounds, "BackfillPosts": testBackfillPosts,
	} {
		t.Run(name, func(t *testing.T) { test(t, cw) })
	}
}

// newGroup is a new log group named after the test.
func newGroup(t *testing.T, cw *cloudwatchlogs.Client) string {
	t.Helper()
	group := "/test/" + t.Name()
	if _, err := cw.CreateLogGroup(t.Context(), &cloudwatchlogs.CreateLogGroupInput{LogGroupName: aws.String(group)}); err != nil {
		t.Fatal(err)
	}
	return group
}

// put writes n events to a new stream of group, one millisecond apart
// from at, their messages "<stream> <i>" and a newline.
func put(t *testing.T, cw *cloudwatchlogs.Client, group, stream string, at time.Time, n int) {
	t.Helper()
	if _, err := cw.CreateLogStream(t.Context(), &cloudwatchlogs.CreateLogStreamInput{LogGroupName: aws.String(group), LogStreamName: aws.String(stream)}); err != nil {
		t.Fatal(err)
	}
	var in []types.InputLogEvent
	for i := range n {
		in = append(in, types.InputLogEvent{Timestamp: aws.Int64(at.UnixMilli() + int64(i)), Message: aws.String(fmt.Sprintf("%s %d\n", stream, i))})
	}
	if _, err := cw.PutLogEvents(t.Context(), &cloudwatchlogs.PutLogEventsInput{LogGroupName: aws.String(group), LogStreamName: aws.String(stream), LogEvents: in}); err != nil {
		t.Fatal(err)
	}
}

// testRead: a group of two streams, over more events than one page holds,
// is read page by page, each page within PageEvents, every event once with
// its id and source, each stream's in order; --since and --until bound the
// span, both included; one stream reads alone.
func testRead(t *testing.T, cw *cloudwatchlogs.Client) {
	group := newGroup(t, cw)
	at := time.Now().Add(-time.Hour).Truncate(time.Millisecond)
	put(t, cw, group, "a", at, 2500)
	put(t, cw, group, "b", at.Add(500*time.Millisecond), 300)

	read := func(q cwlogs.Query) (map[string][]ingest.Event, int) {
		t.Helper()
		bySource, pages := map[string][]ingest.Event{}, 0
		ids := map[string]bool{}
		err := cwlogs.Read(t.Context(), cw, q, ingest.Limits{}, func(evs []ingest.Event) error {
			pages++
			if len(evs) > cwlogs.PageEvents {
				t.Fatalf("a page of %d events", len(evs))
			}
			for _, e := range evs {
				if e.ID == "" || ids[e.ID] {
					t.Fatalf("event id %q empty or given twice", e.ID)
				}
				ids[e.ID] = true
				bySource[e.Source] = append(bySource[e.Source], e)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		return bySource, pages
	}
	inOrder := func(evs []ingest.Event, stream string, from, n int) {
		t.Helper()
		if len(evs) != n {
			t.Fatalf("%d events of %s, want %d", len(evs), stream, n)
		}
		for i, e := range evs {
			want := fmt.Sprintf("%s %d\n", stream, from+i)
			if e.Message != want || !e.Timestamp.Equal(at.Add(time.Duration(from+i)*time.Millisecond+map[string]time.Duration{"a": 0, "b": 500 * time.Millisecond}[stream])) {
				t.Fatalf("event %d of %s: %q at %s, want %q", i, stream, e.Message, e.Timestamp, want)
			}
		}
	}

	all, pages := read(cwlogs.Query{LogGroup: group, Since: at})
	if pages < 3 || len(all) != 2 {
		t.Fatalf("%d pages, %d sources", pages, len(all))
	}
	inOrder(all[group+":a"], "a", 0, 2500)
	inOrder(all[group+":b"], "b", 0, 300)

	span, _ := read(cwlogs.Query{LogGroup: group, Since: at.Add(100 * time.Millisecond), Until: at.Add(199 * time.Millisecond)})
	if len(span) != 1 {
		t.Fatalf("%d sources in the span, want only a", len(span))
	}
	inOrder(span[group+":a"], "a", 100, 100)

	one, _ := read(cwlogs.Query{LogGroup: group, LogStream: "b", Since: at})
	if len(one) != 1 {
		t.Fatalf("%d sources read for stream b alone", len(one))
	}
	inOrder(one[group+":b"], "b", 0, 300)
}

// testReadBounds: an event whose message is over what spool keeps stops
// the reading with an error naming it, the newline that ends it aside;
// a query without a group or a start, with a source for a group or
// ending before it starts, reads nothing and says what to give.
func testReadBounds(t *testing.T, cw *cloudwatchlogs.Client) {
	group := newGroup(t, cw)
	at := time.Now().Add(-time.Hour).Truncate(time.Millisecond)
	put(t, cw, group, "s", at, 1) // "s 0\n": four bytes
	called := false
	page := func([]ingest.Event) error { called = true; return nil }
	q := cwlogs.Query{LogGroup: group, Since: at}
	if err := cwlogs.Read(t.Context(), cw, q, ingest.Limits{MaxMessageBytes: 3}, page); err != nil || !called {
		t.Fatalf("a message of 3 bytes and its newline, limit 3: %v", err)
	}
	called = false
	err := cwlogs.Read(t.Context(), cw, q, ingest.Limits{MaxMessageBytes: 1}, page)
	if err == nil || called || !strings.Contains(err.Error(), "of "+group+":s is over 1 bytes") {
		t.Fatalf("a message over the limit: %v (page called: %v)", err, called)
	}
	for q, want := range map[cwlogs.Query]string{
		{Since: at}:                         "--log-group",
		{LogGroup: group}:                   "--since",
		{LogGroup: group + ":s", Since: at}: "looks like a source",
		{LogGroup: group, Since: at, Until: at.Add(-time.Second)}: "--until",
	} {
		if err := cwlogs.Read(t.Context(), cw, q, ingest.Limits{}, page); err == nil || !strings.Contains(err.Error(), want) || called {
			t.Errorf("%+v: %v, want an error naming %s", q, err, want)
		}
	}
}

// testBackfillPosts: a backfill sends each page in posts within
// MaxPostBytes, which spool's lines decoder reads back as the events in
// CloudWatch's order, and sums up what spool answered; an error of spool's
// stops it, with what was done before.
func testBackfillPosts(t *testing.T, cw *cloudwatchlogs.Client) {
	group := newGroup(t, cw)
	at := time.Now().Add(-time.Hour).Truncate(time.Millisecond)
	put(t, cw, group, "a", at, 1200)
	put(t, cw, group, "b", at.Add(time.Hour/2), 5)

	var got []ingest.Event
	posts := 0
	// Like spool, it takes what it has not seen, and takes b's events
	// as there already.
	send := func(_ context.Context, lines []byte) (cwlogs.Stored, error) {
		posts++
		if len(lines) > 2000 {
			t.Fatalf("a post of %d bytes, over MaxPostBytes", len(lines))
		}
		evs, err := ingest.DecodeLines(bytes.NewReader(lines), ingest.Limits{})
		if err != nil {
			t.Fatal(err)
		}
		var st cwlogs.Stored
		for _, e := range evs {
			got = append(got, e)
			if strings.HasSuffix(e.Source, ":a") {
				st.Accepted++
				if len(st.Sources) == 0 {
					st.Sources = append(st.Sources, cwlogs.SourceStored{Source: e.Source, JobID: "job-a"})
				}
				st.Sources[0].Accepted++
			}
		}
		return st, nil
	}
	var progress []cwlogs.Progress
	b := cwlogs.Backfill{API: cw, Send: send, MaxPostBytes: 2000, Progress: func(p cwlogs.Progress) { progress = append(progress, p) }}
	sum, err := b.Run(t.Context(), cwlogs.Query{LogGroup: group, Since: at})
	if err != nil {
		t.Fatal(err)
	}
	// 1,205 lines of over 100 bytes each make more than 60 posts.
	if len(got) != 1205 || posts < 60 {
		t.Fatalf("%d events in %d posts", len(got), posts)
	}
	for i, e := range got[:1200] {
		if e.Message != fmt.Sprintf("a %d", i) {
			t.Fatalf("event %d sent is %q", i, e.Message)
		}
	}
	want := cwlogs.Summary{Read: 1205, Added: 1200, Sent: 1205, Streams: []cwlogs.StreamSummary{
		{Source: group + ":a", JobID: "job-a", Read: 1200, Added: 1200},
		{Source: group + ":b", Read: 5},
	}}
	if fmt.Sprint(sum) != fmt.Sprint(want) {
		t.Fatalf("summary %+v, want %+v", sum, want)
	}
	if len(progress) != posts || progress[len(progress)-1].Read != 1205 || !progress[len(progress)-1].Through.Equal(at.Add(time.Hour/2+4*time.Millisecond)) {
		t.Fatalf("progress: %d reports for %d posts, the last %+v", len(progress), posts, progress[len(progress)-1])
	}

	// spool refuses the third post: the two before it were sent.
	refused := errors.New("spool refused")
	posts, sent := 0, 0
	b.Send = func(_ context.Context, lines []byte) (cwlogs.Stored, error) {
		if posts++; posts == 3 {
			return cwlogs.Stored{}, refused
		}
		sent += bytes.Count(lines, []byte("\n"))
		return cwlogs.Stored{}, nil
	}
	sum, err = b.Run(t.Context(), cwlogs.Query{LogGroup: group, Since: at})
	if !errors.Is(err, refused) || sum.Added != 0 || sum.Sent != sent || sent == 0 || sum.Read <= sent {
		t.Fatalf("a refused post: %v, %+v (%d events sent)", err, sum, sent)
	}
}
