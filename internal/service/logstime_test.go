package service

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/spool-run/spool"
	spoolv1 "github.com/spool-run/spool/gen/spool/v1"
	"github.com/spool-run/spool/internal/events"
	"github.com/spool-run/spool/internal/store"
	"github.com/spool-run/spool/internal/store/backends/memstore"
	"github.com/spool-run/spool/internal/store/backends/sqlitestore"
)

// logTimeStores are the stores the reads by time run on here; the feed
// they go through is tested on every store by the conformance suite.
var logTimeStores = []struct {
	name string
	open func(t *testing.T) store.JobStore
}{
	{"memory", func(*testing.T) store.JobStore { return memstore.New() }},
	{"sqlite", func(t *testing.T) store.JobStore {
		st, err := sqlitestore.Open(context.Background(), filepath.Join(t.TempDir(), "spool.db"), sqlitestore.Options{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		return st
	}},
}

// minuteLines are n lines written a second apart from t0.
func minuteLines(t0 time.Time, n int) []events.Line {
	lines := numbered(n)
	for i := range lines {
		lines[i].Time = t0.Add(time.Duration(i) * time.Second)
	}
	return lines
}

// TestReadLinesByTime: a page of lines between two times holds the lines
// written in that span, bounds included, and pages on from there as any
// page does; an end before the start is refused, naming both.
func TestReadLinesByTime(t *testing.T) {
	t0 := time.Date(2026, 11, 27, 9, 0, 0, 0, time.UTC)
	for _, sc := range logTimeStores {
		t.Run(sc.name, func(t *testing.T) {
			ls := newLogStoreOn(t, sc.open(t))
			id := ls.job(t, minuteLines(t0, 250), false) // lines 1-250 at t0+0s..t0+249s

			page, err := ls.s.ReadLines(ls.ctx, LinesRequest{JobID: id, Since: t0.Add(99 * time.Second), Until: t0.Add(199 * time.Second), Limit: 60})
			if err != nil {
				t.Fatal(err)
			}
			if got := lineNumbers(page.Lines); len(got) != 60 || got[0] != 100 || got[59] != 159 || !page.HasMore {
				t.Fatalf("first page: lines %v, has more %v; want 100-159 and more", got, page.HasMore)
			}
			page, err = ls.s.ReadLines(ls.ctx, LinesRequest{JobID: id, After: 159, Since: t0.Add(99 * time.Second), Until: t0.Add(199 * time.Second), Limit: 60})
			if err != nil {
				t.Fatal(err)
			}
			if got := lineNumbers(page.Lines); len(got) != 41 || got[0] != 160 || got[40] != 200 || page.HasMore {
				t.Fatalf("second page: lines %v, has more %v; want 160-200 and no more", got, page.HasMore)
			}

			_, err = ls.s.ReadLines(ls.ctx, LinesRequest{JobID: id, Since: t0.Add(time.Minute), Until: t0})
			if !errors.Is(err, spool.ErrInvalidArgument) || !strings.Contains(err.Error(), "until_timestamp") || !strings.Contains(err.Error(), "from_timestamp") {
				t.Fatalf("an end before the start: %v", err)
			}
		})
	}
}

// TestFollowUntil: a follower with an end time gets the lines written up
// to it and its stream ends there, though the job goes on, as soon as a
// line past it is stored, or, when the job prints nothing more, once the
// end time and its grace have passed.
func TestFollowUntil(t *testing.T) {
	for _, sc := range logTimeStores {
		t.Run(sc.name, func(t *testing.T) {
			ls := newLogStoreOn(t, sc.open(t))
			t0 := time.Now().Add(-time.Hour).Truncate(time.Second)
			id := ls.job(t, minuteLines(t0, 120), true) // running, lines up to t0+119s

			feed, err := ls.s.OpenFeed(ls.ctx, &spoolv1.StreamEventsRequest{JobId: id, Follow: true, Unpack: true,
				UntilTimestamp: timestamppb.New(t0.Add(30 * time.Second))})
			if err != nil {
				t.Fatal(err)
			}
			got := followedLines(t, ls.ctx, feed)
			if len(got) != 31 || got[30] != 31 || !feed.UntilReached() || feed.Finished() != nil {
				t.Fatalf("until a stored time: lines %v, reached %v", got, feed.UntilReached())
			}

			// Nothing is written past an end time to come: the stream ends
			// at it, its grace later (the job's flush interval).
			ls.s.cfg.Execution.Batching.FlushIntervalSeconds = 1
			quiet := ls.job(t, minuteLines(t0, 3), true)
			start := time.Now()
			feed, err = ls.s.OpenFeed(ls.ctx, &spoolv1.StreamEventsRequest{JobId: quiet, Follow: true, Unpack: true,
				UntilTimestamp: timestamppb.New(start.Add(200 * time.Millisecond))})
			if err != nil {
				t.Fatal(err)
			}
			got = followedLines(t, ls.ctx, feed)
			took := time.Since(start)
			if len(got) != 3 || !feed.UntilReached() || took < 1200*time.Millisecond {
				t.Fatalf("until a time to come: lines %v, reached %v after %v (want 3 lines, after at least 1.2 s)", got, feed.UntilReached(), took)
			}
		})
	}
}

// followedLines reads a feed to its end (a minute at most) and returns the
// line numbers it yielded.
func followedLines(t *testing.T, ctx context.Context, feed *Feed) []int64 {
	t.Helper()
	defer feed.Close()
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	var evs []*spoolv1.JobEvent
	for ev, err := range feed.Events(ctx) {
		if err != nil {
			t.Fatalf("feed: %v", err)
		}
		evs = append(evs, ev)
	}
	return lineNumbers(evs)
}

// TestReadLinesKeepsRunningJobWatched: a page of a running job's log
// keeps it watched for a while, so its worker flushes promptly for a
// client that polls; a page of a finished job does not.
func TestReadLinesKeepsRunningJobWatched(t *testing.T) {
	ls := newLogStore(t)
	ls.s.pollWatch = time.Minute
	running := ls.job(t, numbered(3), true)
	done := ls.job(t, numbered(3), false)
	for _, id := range []string{running, done} {
		if _, err := ls.s.ReadLines(ls.ctx, LinesRequest{JobID: id}); err != nil {
			t.Fatal(err)
		}
	}
	if !ls.s.watchers.watched(running) || ls.s.watchers.watched(done) {
		t.Fatalf("after a page each: running job watched %v, finished job watched %v", ls.s.watchers.watched(running), ls.s.watchers.watched(done))
	}
}
