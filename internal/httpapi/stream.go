package httpapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/coder/websocket"

	spoolv1 "github.com/spool-run/spool/gen/spool/v1"
	"github.com/spool-run/spool/internal/store"
)

// EndMessage is the last message of a log stream: the job is finished and
// every line up to total_lines has been sent. A normal close (1000) follows;
// any other close means the client should reconnect with last_line.
type EndMessage struct {
	Type       string `json:"type"` // "end"
	JobID      string `json:"job_id"`
	State      string `json:"state"`
	ExitCode   int32  `json:"exit_code"`
	Error      string `json:"error,omitempty"`
	Attempt    int32  `json:"attempt"`
	TotalLines int64  `json:"total_lines"`
}

// handOff is how many stored items the feed may read ahead of the socket:
// enough that lines read while a frame is being written go out together in
// the next one, few enough that a slow client costs a couple of batches.
const handOff = 2

// errClientGone marks failures to write to the client.
var errClientGone = errors.New("client gone")

// feedItem is an event read from the store, or the error that ended the feed.
type feedItem struct {
	ev  *spoolv1.JobEvent
	err error
}

// streamLogs serves GET /api/v1/jobs/{job_id}/logs/ws?last_line=N: every
// line after N from the store, then live lines, then an end message.
func (a *api) streamLogs(w http.ResponseWriter, r *http.Request) {
	last, err := intParam(r.URL.Query(), "last_line", 0, 0, maxLine, "the last line number the client has, 0 or more")
	if err != nil {
		writeError(w, r, a.Log, err)
		return
	}
	// Answer a bad job id before the upgrade, while a status can say so.
	job, err := a.job(r)
	if err != nil {
		writeError(w, r, a.Log, err)
		return
	}
	// Same-origin only (Accept's default): no credentials guard the API
	// yet, so other sites' pages must not read logs through a visitor.
	conn, err := websocket.Accept(w, r, nil)
	if err != nil {
		return // Accept has answered the request
	}
	a.streams.Add(1)
	defer a.streams.Done()
	s := &stream{api: a, conn: conn, job: job, last: last}
	s.run(r.Context())
}

// stream is one WebSocket following one job's log.
type stream struct {
	*api
	conn  *websocket.Conn
	job   *spoolv1.Job
	last  int64 // the last line sent (or the client had)
	feed  *store.Feed
	start time.Time
}

func (s *stream) run(base context.Context) {
	s.start = time.Now()
	id := s.job.GetJobId()
	// connCtx ends when the client closes or the connection breaks (the
	// library reads control frames for us) or when the handler returns.
	connCtx, endConn := context.WithCancel(s.conn.CloseRead(base))
	defer endConn()
	// The feed also stops when the server drains; writes do not, so a
	// frame being written completes and the client gets a proper 1012.
	feedCtx, stopFeed := context.WithCancel(connCtx)
	defer stopFeed()
	go func() {
		select {
		case <-s.Drain:
			stopFeed()
		case <-feedCtx.Done():
		}
	}()
	if s.Watch != nil && !store.IsFinal(s.job.GetState()) {
		defer s.Watch(id)()
	}
	var bg sync.WaitGroup
	kaCtx, stopKeepalive := context.WithCancel(connCtx)
	bg.Go(func() { keepalive(kaCtx, s.conn, s.PingInterval) })

	s.feed = store.NewFeed(s.Store, store.FeedRequest{JobID: id, FromLine: s.last + 1, Types: outputOnly, Follow: true})
	items := make(chan feedItem, handOff)
	bg.Go(func() { pump(feedCtx, s.feed, items) })
	s.Log.DebugContext(base, "log stream started", "job_id", id, "last_line", s.last)

	err := s.send(connCtx, feedCtx, items)
	// Stop the helpers before closing: a ping racing the close handshake
	// would tear the connection down under it.
	stopFeed()
	stopKeepalive()
	bg.Wait()
	s.finish(base, err)
}

// pump reads the feed into items. When the client is slow, items stays
// full and the feed is simply not read further: it reads the store from
// where it was when the client catches up, so nothing queues and nothing is
// lost.
func pump(ctx context.Context, feed *store.Feed, items chan<- feedItem) {
	defer close(items)
	for ev, err := range feed.Events(ctx) {
		select {
		case items <- feedItem{ev, err}:
		case <-ctx.Done():
			return
		}
		if err != nil {
			return
		}
	}
}

// send writes the feed's lines until it ends (nil: the job is finished and
// every line was sent) or fails. Lines already read go out together, up to
// a frame's cap; the next read is only awaited with nothing left to send.
func (s *stream) send(connCtx, feedCtx context.Context, items <-chan feedItem) error {
	f := newFrame()
	for {
		it, got, open := receive(feedCtx, items, f.empty())
		switch {
		case feedCtx.Err() != nil:
			return feedCtx.Err()
		case !open:
			return s.flush(connCtx, f)
		case !got:
			if err := s.flush(connCtx, f); err != nil {
				return err
			}
			continue
		case it.err != nil:
			return it.err
		}
		for _, l := range linesOf(it.ev) {
			if l.LineNumber <= s.last {
				continue // the feed starts after s.last; this guards the invariant
			}
			if !f.encode(&l) {
				if err := s.flush(connCtx, f); err != nil {
					return err
				}
			}
			f.add()
			s.last = l.LineNumber
		}
	}
}

// receive takes the next item, waiting for one only if wait is set.
// got=false with open=true means none was ready (or ctx ended).
func receive(ctx context.Context, items <-chan feedItem, wait bool) (it feedItem, got, open bool) {
	if wait {
		select {
		case it, open = <-items:
			return it, open, open
		case <-ctx.Done():
			return it, false, true
		}
	}
	select {
	case it, open = <-items:
		return it, open, open
	default:
		return it, false, true
	}
}

// flush sends the frame, if it holds lines, and empties it.
func (s *stream) flush(ctx context.Context, f *frame) error {
	if f.empty() {
		return nil
	}
	msg := f.message()
	if s.onFrame != nil {
		s.onFrame(f.lines, len(msg))
	}
	err := s.conn.Write(ctx, websocket.MessageText, msg)
	f.reset()
	if err != nil {
		return fmt.Errorf("%w: %w", errClientGone, err)
	}
	return nil
}

// finish ends the connection as err says and logs how it ended.
func (s *stream) finish(ctx context.Context, err error) {
	outcome := s.close(ctx, err)
	s.Log.DebugContext(ctx, "log stream ended", "job_id", s.job.GetJobId(), "last_line", s.last, "outcome", outcome, "duration", time.Since(s.start))
}

// close ends the connection: after the end message with a normal close
// when the log is complete (err nil), with 1012 when the server drains, at
// once when the client is gone, else with 1011 and the error logged. Only a
// normal close tells the client its log is complete.
func (s *stream) close(ctx context.Context, err error) (outcome string) {
	if err == nil {
		if err = s.sendEnd(ctx); err == nil {
			_ = s.conn.Close(websocket.StatusNormalClosure, "job finished; log complete")
			return "finished"
		}
	}
	switch {
	case errors.Is(err, errClientGone), errors.Is(err, context.Canceled) && !closed(s.Drain):
		_ = s.conn.CloseNow()
		return "client gone"
	case errors.Is(err, context.Canceled):
		_ = s.conn.Close(websocket.StatusServiceRestart, "server restarting; reconnect with last_line")
		return "server draining"
	}
	id := errorID()
	s.Log.ErrorContext(ctx, "log stream failed", "job_id", s.job.GetJobId(), "error_id", id, "error", err)
	_ = s.conn.Close(websocket.StatusInternalError, "internal error "+id+"; reconnect with last_line")
	return "failed"
}

// sendEnd sends the end message of a feed that ended with the job final.
func (s *stream) sendEnd(ctx context.Context) error {
	job := s.feed.Finished()
	if job == nil {
		return errors.New("log feed ended before the job finished")
	}
	msg, err := json.Marshal(EndMessage{
		Type:       "end",
		JobID:      job.GetJobId(),
		State:      store.StateName(job.GetState()),
		ExitCode:   job.GetResult().GetExitCode(),
		Error:      job.GetResult().GetError(),
		Attempt:    job.GetResult().GetAttempt(),
		TotalLines: job.GetLineCount(),
	})
	if err != nil {
		return err
	}
	wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := s.conn.Write(wctx, websocket.MessageText, msg); err != nil {
		return fmt.Errorf("%w: %w", errClientGone, err)
	}
	return nil
}

// keepalive pings the client every interval and drops the connection when
// a ping goes unanswered for as long: the client is gone or stuck, and if
// it is alive it reconnects with its last line.
func keepalive(ctx context.Context, c *websocket.Conn, every time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		pctx, cancel := context.WithTimeout(ctx, every)
		err := c.Ping(pctx)
		cancel()
		if err != nil {
			if ctx.Err() == nil {
				_ = c.CloseNow()
			}
			return
		}
	}
}

func closed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}
