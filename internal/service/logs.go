package service

import (
	"context"
	"errors"
	"iter"
	"sync"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	spoolv1 "github.com/spool-run/spool/gen/spool/v1"
	"github.com/spool-run/spool/internal/batcher"
	"github.com/spool-run/spool/internal/convert"
	"github.com/spool-run/spool/internal/events"
	"github.com/spool-run/spool/internal/store/storekit"
)

// Pages of lines (ReadLines). A page also ends once it holds MaxPageBytes of
// output, so 10,000 very long lines cannot make one answer of gigabytes;
// HasMore then says to go on.
const (
	DefaultPageLines = 1000
	MaxPageLines     = 10000
	MaxPageBytes     = 8 << 20
	// MaxLine is the largest line number a request may name: far past any
	// log, and small enough that line arithmetic cannot overflow.
	MaxLine = 1 << 53
)

// Feed is one reader of a job's log: everything stored from the requested
// point, then, when following, each new event as it is stored, until the
// job is final. The stored part and the live part meet without a gap or a
// repeat, and a slow reader only slows its own reads: nothing is buffered
// for it and nothing is dropped.
//
// While a following feed is open, the job counts as watched, so its worker
// flushes output promptly. Close the feed when done.
type Feed struct {
	s       *Service
	f       *storekit.Feed
	job     *spoolv1.Job
	unpack  bool
	follow  bool
	release func()

	mu      sync.Mutex
	checked time.Time // when the reader's credentials were last checked
}

// OpenFeed checks a request to read a job's events (the StreamEvents call,
// which the REST log pages and the WebSocket use too) and opens its feed.
// A missing job is spool.ErrNotFound, reported before anything is read.
func (s *Service) OpenFeed(ctx context.Context, m *spoolv1.StreamEventsRequest) (*Feed, error) {
	return s.openFeed(ctx, m, 0)
}

// openFeed is OpenFeed with reads of at most maxPage stored items (0: the
// feed's own cap).
func (s *Service) openFeed(ctx context.Context, m *spoolv1.StreamEventsRequest, maxPage int) (*Feed, error) {
	if m.GetFromSequence() < 0 || m.GetFromLine() < 0 {
		return nil, invalid("from_sequence and from_line must not be negative")
	}
	if m.GetFromLine() > MaxLine {
		return nil, invalid("from_line %d is past any log (at most %d)", m.GetFromLine(), int64(MaxLine))
	}
	if err := checkEventTypes(m.GetEventTypes()); err != nil {
		return nil, err
	}
	from, until, err := timeSpan(m.GetFromTimestamp(), m.GetUntilTimestamp())
	if err != nil {
		return nil, err
	}
	// Following a log is what a WebSocket ticket is for: the stream of
	// the job it names may be opened with it.
	authCtx := ctx
	if m.GetFollow() {
		authCtx = forLogStream(ctx, m.GetJobId())
	}
	job, err := s.job(authCtx, "StreamEvents", m.GetJobId())
	if err != nil {
		return nil, err
	}
	return s.feedOf(job, m, from, until, maxPage), nil
}

// feedOf is the feed of job that m, a checked request whose times are from
// and until, asks for; the caller has been let read job.
func (s *Service) feedOf(job *spoolv1.Job, m *spoolv1.StreamEventsRequest, from, until time.Time, maxPage int) *Feed {
	fr := storekit.FeedRequest{
		JobID:        job.GetJobId(),
		FromSequence: m.GetFromSequence(),
		FromLine:     m.GetFromLine(),
		FromTime:     from,
		UntilTime:    until,
		UntilGrace:   untilGrace(job),
		Types:        m.GetEventTypes(),
		Follow:       m.GetFollow(),
		MaxPage:      maxPage,
		Job:          job, // a final one is not read again
	}
	f := &Feed{s: s, f: storekit.NewFeed(s.store, fr), job: job, unpack: m.GetUnpack(), follow: m.GetFollow(), release: func() {}, checked: time.Now()}
	if m.GetFollow() && !convert.State(job.GetState()).IsFinal() {
		f.release = s.watchers.add(job.GetJobId())
	}
	return f
}

// timeSpan checks a read's start and end times (nil: none) and returns
// them as times (zero: none).
func timeSpan(from, until *timestamppb.Timestamp) (time.Time, time.Time, error) {
	var f, u time.Time
	for _, ts := range []struct {
		t    *timestamppb.Timestamp
		to   *time.Time
		name string
	}{{from, &f, "from_timestamp"}, {until, &u, "until_timestamp"}} {
		if ts.t == nil {
			continue
		}
		if err := ts.t.CheckValid(); err != nil {
			return f, u, invalid("%s: %v", ts.name, err)
		}
		*ts.to = ts.t.AsTime()
	}
	if !f.IsZero() && !u.IsZero() && u.Before(f) {
		return f, u, invalid("until_timestamp %s is before from_timestamp %s: no line can be in between; give an end after the start",
			u.UTC().Format(time.RFC3339Nano), f.UTC().Format(time.RFC3339Nano))
	}
	return f, u, nil
}

// untilGrace is how long after its end time a followed read of job waits
// for lines written before it. A worker that hears of no reader sends its
// lines at least every flush interval, and one that does (a following feed
// counts as one) much sooner, so the job's flush interval covers both.
func untilGrace(job *spoolv1.Job) time.Duration {
	if s := job.GetExecutionConfig().GetBatching().GetFlushIntervalSeconds(); s > 0 {
		return time.Duration(s) * time.Second
	}
	return batcher.DefaultFlushInterval
}

// Job is the job as it was when the feed was opened.
func (f *Feed) Job() *spoolv1.Job { return f.job }

// Finished is the job as it ended, once the feed has yielded every event of
// a final job; nil otherwise.
func (f *Feed) Finished() *spoolv1.Job { return f.f.Finished() }

// UntilReached reports whether the feed ended at the request's end time
// (until_timestamp) rather than at the job's end or what was stored.
func (f *Feed) UntilReached() bool { return f.f.UntilReached() }

// Close ends the feed's watch of the job. It is safe to call more than once.
func (f *Feed) Close() { f.release() }

// Events yields the feed's events in sequence order: batches as stored
// (the first trimmed to the start), or one OUTPUT_DATA event per line when
// the request asked to unpack them. When the server drains, it ends with a
// spool.ErrUnavailable error: the reader should resume after the last
// sequence it got, here after the restart or on another server.
func (f *Feed) Events(ctx context.Context) iter.Seq2[*spoolv1.JobEvent, error] {
	return func(yield func(*spoolv1.JobEvent, error) bool) {
		for st, err := range f.Stored(ctx) {
			var ev *spoolv1.JobEvent
			if err == nil {
				if ev, err = st.Event(); err != nil {
					err = f.s.fail(ctx, "StreamEvents", err)
				}
			}
			if !yield(ev, err) || err != nil {
				return
			}
		}
	}
}

// Stored yields what Events yields as stored events, for an entrance that
// can send a batch the reader gets whole as it was stored
// (events.Stored.Payload, Proto) instead of decoding and encoding it again.
// Events cut from a batch (the first, or lines when unpacking) carry no
// such bytes.
func (f *Feed) Stored(ctx context.Context) iter.Seq2[*events.Stored, error] {
	return storekit.Flatten(f.Pages(ctx))
}

// Pages yields what Stored yields, the events read from the store together
// at a time (following a job, what arrived since the last), for an entrance
// that sends several in one message.
//
// The reader's credentials are checked again as it reads, at most every
// recheckEvery, and, while a following feed waits for a quiet job, every
// recheckEvery too: a feed of a revoked key or an ended login ends with
// that refusal (spool.ErrUnauthenticated) within a few seconds, whether or
// not the job prints anything.
func (f *Feed) Pages(ctx context.Context) iter.Seq2[[]*events.Stored, error] {
	return func(yield func([]*events.Stored, error) bool) {
		drainCtx, stop := f.s.untilDrain(ctx)
		defer stop()
		feedCtx, refuse := context.WithCancelCause(drainCtx)
		var guard sync.WaitGroup
		defer func() {
			refuse(nil)
			guard.Wait()
		}()
		if f.follow {
			guard.Go(func() { f.guard(ctx, feedCtx, refuse) })
		}
		for page, err := range f.f.Pages(feedCtx) {
			if err != nil {
				switch cause := context.Cause(feedCtx); {
				case drainCtx.Err() == nil && feedCtx.Err() != nil:
					err = cause // the guard's refusal
				case f.s.draining() && ctx.Err() == nil:
					err = errDraining
				default:
					err = f.s.fail(ctx, "StreamEvents", err)
				}
				yield(nil, err)
				return
			}
			if err := f.recheck(ctx); err != nil {
				yield(nil, err)
				return
			}
			if f.unpack {
				if page, err = f.unpacked(ctx, page); err != nil {
					yield(nil, err)
					return
				}
			}
			if !yield(page, nil) {
				return
			}
		}
	}
}

// guard checks the reader's credentials while the feed waits, and ends
// the feed with the refusal when they no longer hold.
func (f *Feed) guard(ctx, feedCtx context.Context, refuse context.CancelCauseFunc) {
	// Ticking at half the interval keeps a check from waiting almost two
	// intervals behind one a page made.
	t := time.NewTicker(recheckEvery / 2)
	defer t.Stop()
	for {
		select {
		case <-feedCtx.Done():
			return
		case <-t.C:
		}
		if err := f.recheck(ctx); err != nil {
			refuse(err)
			return
		}
	}
}

// unpacked is a page with one event per line.
func (f *Feed) unpacked(ctx context.Context, page []*events.Stored) ([]*events.Stored, error) {
	var out []*events.Stored
	for _, st := range page {
		ev, err := st.Event()
		if err != nil {
			return nil, f.s.fail(ctx, "StreamEvents", err)
		}
		for _, line := range events.Unpack(ev) {
			out = append(out, events.StoredOf(line))
		}
	}
	return out, nil
}

// recheckEvery is how long a feed goes on with the credentials it was
// opened with before checking them again: a stream outlives a revoked key
// or an ended login by at most about that long, and an open stream costs
// a key lookup (and, for a login, a read of its end) that often.
const recheckEvery = 2 * time.Second

// recheck makes sure the reader's credentials still hold before it is
// given more of the log, at most every recheckEvery.
func (f *Feed) recheck(ctx context.Context) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if time.Since(f.checked) < recheckEvery {
		return nil
	}
	if err := f.s.stillValid(ctx); err != nil {
		return err
	}
	f.checked = time.Now()
	return nil
}

// LinesRequest selects a page of a job's output lines: those numbered after
// After and before Before (both exclusive; Before 0: no upper bound),
// written at or after Since and at or before Until (zero: no bound), at
// most Limit of them (0: DefaultPageLines; more than MaxPageLines counts as
// MaxPageLines) and at most MaxBytes of output (0 or more than MaxPageBytes:
// MaxPageBytes), but always at least one line when there is one.
//
// Wait makes a read that finds no such line of a running job a long poll:
// it waits up to Wait (more than MaxLinesWait counts as MaxLinesWait) for
// one to be stored, the job to end or Until to pass, and answers then.
type LinesRequest struct {
	JobID         string
	After, Before int64
	Since, Until  time.Time
	Limit         int
	MaxBytes      int
	Wait          time.Duration
}

// MaxLinesWait is the longest a read of lines waits for one. A client
// that wants to wait longer asks again; a bound this short keeps a
// waiting request within the idle timeouts of the proxies in between.
const MaxLinesWait = 30 * time.Second

// LinesPage is a page of lines.
type LinesPage struct {
	// Job is the job as it was read, before its lines.
	Job *spoolv1.Job
	// Lines are OUTPUT_DATA events, one per line, in line order.
	Lines []*spoolv1.JobEvent
	// HasMore: lines after this page (and before Before) are stored already.
	HasMore bool
	// Limit is the page size used.
	Limit int
}

// pollWatch is how long a page read of a running job's log keeps the job
// watched. Pages are what a client polls for a live log without a
// stream (the REST API's readers, a script's loop): at 5 s, one polling
// every second or two is watched without a break, lines then reach the
// store within moments of being printed, and once the poller stops, the
// worker is back to its own pace within seconds, so a forgotten poll
// costs little.
const pollWatch = 5 * time.Second

// ReadLines reads a page of a job's stored output lines. It reads one line
// past the page to know whether there is more, which costs at most one
// more stored batch. An output item holds a line at least, so no read
// fetches more than limit+1 items, and the first fetches one.
//
// A page of a job that is not final keeps the job watched for a while
// (pollWatch), as a follower does, so a client polling the pages sees
// lines as promptly. With r.Wait, a read that finds nothing new of a
// running job waits for it (awaitLines) and reads again, so such a
// client sees each line as soon as it is stored, not at its next poll.
func (s *Service) ReadLines(ctx context.Context, r LinesRequest) (*LinesPage, error) {
	switch {
	case r.Limit < 0 || r.After < 0 || r.Before < 0 || r.Wait < 0:
		return nil, invalid("limit, after_line, before_line and wait must not be negative")
	case r.After > MaxLine || r.Before > MaxLine:
		return nil, invalid("line numbers go up to %d", int64(MaxLine))
	case r.Before > 0 && r.Before <= r.After:
		return nil, invalid("before_line=%d must be greater than after_line=%d (both bounds are exclusive: after_line=0&before_line=11 is lines 1 to 10)", r.Before, r.After)
	}
	limit := r.Limit
	if limit == 0 {
		limit = DefaultPageLines
	}
	limit = min(limit, MaxPageLines)
	maxBytes := r.MaxBytes
	if maxBytes <= 0 || maxBytes > MaxPageBytes {
		maxBytes = MaxPageBytes
	}
	m := &spoolv1.StreamEventsRequest{JobId: r.JobID, FromLine: r.After + 1,
		FromTimestamp: timestampOf(r.Since), UntilTimestamp: timestampOf(r.Until),
		EventTypes: []spoolv1.EventType{spoolv1.EventType_EVENT_TYPE_OUTPUT_BATCH}, Unpack: true}
	page, err := s.readLines(ctx, r, m, limit, maxBytes)
	// Lines are numbered densely, so with Before just past After nothing
	// can ever be in the page.
	if err != nil || r.Wait == 0 || len(page.Lines) > 0 || convert.State(page.Job.GetState()).IsFinal() || r.Before == r.After+1 {
		return page, err
	}
	if err := s.awaitLines(ctx, page.Job, m, r.Since, r.Until, min(r.Wait, MaxLinesWait)); err != nil {
		return nil, err
	}
	return s.readLines(ctx, r, m, limit, maxBytes)
}

// readLines reads the page r asks for through a feed of m, as ReadLines
// describes.
func (s *Service) readLines(ctx context.Context, r LinesRequest, m *spoolv1.StreamEventsRequest, limit, maxBytes int) (*LinesPage, error) {
	feed, err := s.openFeed(ctx, m, limit+1)
	if err != nil {
		return nil, err
	}
	defer feed.Close()
	if !convert.State(feed.Job().GetState()).IsFinal() {
		s.watchers.polled(feed.Job().GetJobId(), s.pollWatch)
	}
	page := &LinesPage{Job: feed.Job(), Lines: make([]*spoolv1.JobEvent, 0, min(limit, 1024)), Limit: limit}
	size := 0
	for ev, err := range feed.Events(ctx) {
		if err != nil {
			return nil, err
		}
		line := ev.GetOutputData()
		if r.Before > 0 && line.GetLineNumber() >= r.Before {
			return page, nil
		}
		size += len(line.GetOutput())
		if len(page.Lines) == limit || (len(page.Lines) > 0 && size > maxBytes) {
			page.HasMore = true
			return page, nil
		}
		page.Lines = append(page.Lines, ev)
	}
	return page, nil
}

// awaitLines waits up to wait for a line that m, a read of job's lines
// from since until until that found none, would find: until one is
// stored, the job ends or until (and its grace) passes. It follows the log
// as a stream does, so it is woken by the store's notice of new output
// instead of reading the store over and over, the job counts as watched
// meanwhile, and the reader's credentials are checked again as a
// stream's are. When the server drains, the wait ends as if it had passed:
// the reader gets the page as it is and asks again, of a server that is up.
func (s *Service) awaitLines(ctx context.Context, job *spoolv1.Job, m *spoolv1.StreamEventsRequest, since, until time.Time, wait time.Duration) error {
	waitCtx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	follow := proto.CloneOf(m)
	follow.Follow, follow.Unpack = true, false
	f := s.feedOf(job, follow, since, until, 1)
	defer f.Close()
	if s.awaiting != nil {
		s.awaiting()
	}
	for _, err := range f.Pages(waitCtx) {
		if err != nil && ctx.Err() == nil && (waitCtx.Err() != nil || errors.Is(err, errDraining)) {
			return nil
		}
		return err // nil: something came
	}
	return nil // the job ended, or the end time passed
}

// timestampOf is t as a message, nil when t is zero (no bound).
func timestampOf(t time.Time) *timestamppb.Timestamp {
	if t.IsZero() {
		return nil
	}
	return timestamppb.New(t)
}
