package httpapi

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/coder/websocket"

	"github.com/spool-run/spool"
	spoolv1 "github.com/spool-run/spool/gen/spool/v1"
	"github.com/spool-run/spool/internal/convert"
	"github.com/spool-run/spool/internal/service"
)

// EndMessage is the last message of a log stream: the job is finished and
// every line up to total_lines has been sent. A normal close (1000) follows;
// a close with CloseUnauthenticated or ClosePermissionDenied means the
// reader's credentials no longer hold (the reason says why) and
// reconnecting with them is pointless; any other close means the client
// should reconnect with last_line.
type EndMessage struct {
	Type       string `json:"type"` // "end"
	JobID      string `json:"job_id"`
	State      string `json:"state"`
	ExitCode   int32  `json:"exit_code"`
	Error      string `json:"error,omitempty"`
	Attempt    int32  `json:"attempt"`
	TotalLines int64  `json:"total_lines"`
}

// Close codes of a stream ended because its reader may no longer read: the
// key was revoked or the login ended (as HTTP's 401), or the key lost the
// right (as 403). They are in the range the WebSocket protocol leaves to
// applications, and the close reason names the cause.
const (
	CloseUnauthenticated  websocket.StatusCode = 4401
	ClosePermissionDenied websocket.StatusCode = 4403
)

// maxCloseReason is the most bytes a close reason may have (a control
// frame's payload is 125 bytes, two of them the code).
const maxCloseReason = 123

// handOff is how many stored items the feed may read ahead of the socket:
// enough that lines read while a frame is being written go out together in
// the next one, few enough that a slow client costs a couple of batches.
const handOff = 2

// sendBuffer is the socket send buffer a stream asks for. The system would
// grow it to megabytes for a client that reads slowly, which is memory held
// for that client, and a writer blocked on a full buffer is let go only
// once about half of it has drained, so a slow reader's frames would
// complete seconds apart: keepalive counts completed frames as signs of
// life. A few frames' worth is enough to keep a fast client busy.
const sendBuffer = 64 << 10

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
	last, err := intParam(r.URL.Query(), "last_line", 0, 0, service.MaxLine, "the last line number the client has, 0 or more")
	if err != nil {
		writeError(w, r, a.Log, err)
		return
	}
	// Open the feed before the upgrade, so a bad job id is answered while a
	// status can still say so.
	feed, err := a.Service.OpenFeed(r.Context(), &spoolv1.StreamEventsRequest{JobId: r.PathValue("job_id"), FromLine: last + 1,
		EventTypes: outputOnly, Follow: true})
	if err != nil {
		writeError(w, r, a.Log, err)
		return
	}
	defer feed.Close()
	if !a.streams.join() {
		writeError(w, r, a.Log, fmt.Errorf("%w: the server is stopping; reconnect to resume from line %d", spool.ErrUnavailable, last+1))
		return
	}
	defer a.streams.leave()
	// The server's own pages and the configured CORS origins only: the
	// session cookie would otherwise let any site's page read logs through
	// a logged-in visitor.
	conn, err := websocket.Accept(smallSendBuffer{w}, r, &websocket.AcceptOptions{OriginPatterns: a.originHosts})
	if err != nil {
		return // Accept has answered the request
	}
	s := &stream{api: a, conn: conn, job: feed.Job(), feed: feed, last: last}
	s.run(r.Context())
}

// smallSendBuffer hands the WebSocket library the connection it hijacks
// with its send buffer set to sendBuffer.
type smallSendBuffer struct{ http.ResponseWriter }

func (w smallSendBuffer) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	c, rw, err := http.NewResponseController(w.ResponseWriter).Hijack()
	if tc, ok := c.(interface{ SetWriteBuffer(int) error }); ok && err == nil {
		_ = tc.SetWriteBuffer(sendBuffer) // best effort: the stream works without
	}
	return c, rw, err
}

func (w smallSendBuffer) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// stream is one WebSocket following one job's log.
type stream struct {
	*api
	conn  *websocket.Conn
	job   *spoolv1.Job
	last  int64 // the last line sent (or the client had)
	feed  *service.Feed
	start time.Time
	// written counts the frames whose write has completed: the client is
	// taking them, however slowly.
	written atomic.Int64
}

func (s *stream) run(base context.Context) {
	s.start = time.Now()
	id := s.job.GetJobId()
	// connCtx ends when the client closes or the connection breaks (the
	// library reads control frames for us) or when the handler returns.
	connCtx, endConn := context.WithCancel(s.conn.CloseRead(base))
	defer endConn()
	// The feed also stops when the server drains (the core ends it with
	// spool.ErrUnavailable); writes do not, so a frame being written
	// completes and the client gets a proper 1012.
	feedCtx, stopFeed := context.WithCancel(connCtx)
	defer stopFeed()
	var bg sync.WaitGroup
	kaCtx, stopKeepalive := context.WithCancel(connCtx)
	bg.Go(func() { keepalive(kaCtx, s.conn, s.PingInterval, &s.written) })

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
func pump(ctx context.Context, feed *service.Feed, items chan<- feedItem) {
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
	s.written.Add(1)
	return nil
}

// finish ends the connection as err says and logs how it ended.
func (s *stream) finish(ctx context.Context, err error) {
	outcome := s.close(ctx, err)
	s.Log.DebugContext(ctx, "log stream ended", "job_id", s.job.GetJobId(), "last_line", s.last, "outcome", outcome, "duration", time.Since(s.start))
}

// close ends the connection: after the end message with a normal close
// when the log is complete (err nil), with 1012 when the server drains,
// with 4401 or 4403 and the refusal as reason when the reader's key or
// login no longer holds, at once when the client is gone, else with 1011
// and the error logged. Only a normal close tells the client its log is
// complete.
func (s *stream) close(ctx context.Context, err error) (outcome string) {
	if err == nil {
		if err = s.sendEnd(ctx); err == nil {
			_ = s.conn.Close(websocket.StatusNormalClosure, "job finished; log complete")
			return "finished"
		}
	}
	switch {
	case errors.Is(err, spool.ErrUnauthenticated):
		_ = s.conn.Close(CloseUnauthenticated, closeReason(err))
		return "refused: " + err.Error()
	case errors.Is(err, spool.ErrPermissionDenied):
		_ = s.conn.Close(ClosePermissionDenied, closeReason(err))
		return "refused: " + err.Error()
	case errors.Is(err, spool.ErrUnavailable):
		_ = s.conn.Close(websocket.StatusServiceRestart, "server restarting; reconnect with last_line")
		return "server draining"
	case errors.Is(err, errClientGone), errors.Is(err, context.Canceled):
		_ = s.conn.CloseNow()
		return "client gone"
	}
	id := service.ErrorID()
	s.Log.ErrorContext(ctx, "log stream failed", "job_id", s.job.GetJobId(), "error_id", id, "error", err)
	_ = s.conn.Close(websocket.StatusInternalError, "internal error "+id+"; reconnect with last_line")
	return "failed"
}

// closeReason is err's message cut to fit a close frame, on a character
// boundary.
func closeReason(err error) string {
	msg := err.Error()
	if len(msg) <= maxCloseReason {
		return msg
	}
	cut := maxCloseReason - len("…")
	for cut > 0 && !utf8.RuneStart(msg[cut]) {
		cut--
	}
	return msg[:cut] + "…"
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
		State:      convert.State(job.GetState()).String(),
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

// keepalive drops the connection when, for a whole interval, the client
// neither answered a ping nor took a frame: it is gone or stuck, and if it
// is alive it reconnects with its last line. Frames count because a ping
// queues behind the frames already sent: a client reading a long log
// slowly answers late, but its frames keep being written through.
func keepalive(ctx context.Context, c *websocket.Conn, every time.Duration, written *atomic.Int64) {
	t := time.NewTicker(every)
	defer t.Stop()
	pongs := make(chan error, 1)
	pinging := false
	defer func() {
		if pinging {
			<-pongs // the ping ends with ctx or the connection
		}
	}()
	answered, frames := true, written.Load() // nothing asked yet
	for {
		select {
		case <-ctx.Done():
			return
		case err := <-pongs:
			pinging = false
			if err != nil {
				if ctx.Err() == nil {
					_ = c.CloseNow()
				}
				return
			}
			answered = true
			continue
		case <-t.C:
		}
		now := written.Load()
		if !answered && now == frames {
			_ = c.CloseNow()
			return
		}
		answered, frames = false, now
		if !pinging {
			pinging = true
			go func() { pongs <- c.Ping(ctx) }()
		}
	}
}

// outputOnly selects output events from a feed.
var outputOnly = []spoolv1.EventType{spoolv1.EventType_EVENT_TYPE_OUTPUT_BATCH}
