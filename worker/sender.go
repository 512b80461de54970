package worker

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"sync"
	"time"

	"connectrpc.com/connect"

	spoolv1 "github.com/spool-run/spool/gen/spool/v1"
	"github.com/spool-run/spool/internal/backoff"
	"github.com/spool-run/spool/internal/outbox"
)

// Per PublishEvents call: enough to catch up quickly after an outage,
// small enough to stay far below the server's request limit.
const (
	publishMaxEvents = 256
	publishMaxBytes  = 8 << 20
)

// sender drains one attempt's outbox to the server, in order, retrying
// until each call is acknowledged. PublishEvents and CompleteJob are
// idempotent, so a retry after a lost response changes nothing.
//
// How the attempt ends on the server is the sender's to say, once all the
// output before it is delivered: complete it (the outbox holds a result),
// hand it back (release), or, when the attempt lost its lease and its
// output can no longer be delivered, report how much was lost.
type sender struct {
	w     *Worker
	ob    *outbox.Outbox
	token string
	log   *slog.Logger

	// completeTakesEvents: the server that leased the job stores events
	// sent with CompleteJob, so the last ones go with the result.
	completeTakesEvents bool
	// encoded: the server takes events encoded as it stores them (with
	// their attempt and line numbers), and stores them without decoding
	// them again.
	encoded bool
	// started and ended, when set, are closed once the attempt's command
	// has started and ended: the first read waits for the end up to
	// quickJob after the start (awaitQuickEnd), so that a short job's
	// events and result are read, and sent, together.
	started, ended <-chan struct{}
	// pace holds publishes while nobody watches the job (nil: never).
	pace *pace

	// skipThrough: events ending at or before this sequence are already
	// stored (a reopened outbox resends from its oldest segment).
	skipThrough int64

	onWatched func(bool)
	// onLost is told the attempt's output can no longer be delivered:
	// another attempt owns the job (or it is finished).
	onLost func(reason string)
	// onRefused is told the server refused the output for good.
	onRefused func(err error)

	refused error

	mu   sync.Mutex
	back *handBack // set: hand the job back once the outbox is drained
}

// handBack is how to release a job whose outbox ends without a result.
type handBack struct {
	reason string
	count  bool
}

// errLeaseLost ends a sender whose attempt was fenced off.
var errLeaseLost = errors.New("lease lost")

// release asks the sender to hand the job back once everything in the
// outbox is delivered, instead of leaving it to its lease running out.
// count says whether the attempt counts against max_attempts (a lost
// lease) or not (a worker that is stopping).
func (s *sender) release(reason string, count bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.back = &handBack{reason: reason, count: count}
}

func (s *sender) handBack() *handBack {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.back
}

// run sends until the outbox is drained (nil), the lease is lost
// (errLeaseLost), or ctx ends (its error; the outbox stays on disk).
func (s *sender) run(ctx context.Context) error {
	defer s.w.sendingNow(s)()
	if s.ended != nil {
		awaitQuickEnd(ctx, s.started, s.ended)
	}
	bo := newPauses()
	// lastSent is when the last publish was answered, if the chunk it
	// sent left nothing behind it: then the next may be held (see pace).
	var lastSent time.Time
	for {
		s.pace.hold(ctx, lastSent, s.ended)
		c, err := s.ob.Next(ctx, publishMaxEvents, publishMaxBytes)
		switch {
		case err == io.EOF:
			if hb := s.handBack(); hb != nil {
				if err := s.releaseJob(ctx, bo, hb); err != nil && !errors.Is(err, errLeaseLost) {
					return err
				}
			}
			return s.ob.Remove()
		case errors.Is(err, outbox.ErrBroken):
			// Everything the disk kept is delivered; the rest is lost.
			s.w.spool.broke(err)
			s.log.Error("the spool directory could not be written; handing the job back", "dir", s.w.cfg.SpoolDir, "error", err)
			hb := &handBack{reason: "its worker could not write its spool directory (" + err.Error() + "); output after that was lost", count: true}
			if err := s.releaseJob(ctx, bo, hb); err != nil && !errors.Is(err, errLeaseLost) {
				return err
			}
			return s.ob.Remove()
		case err != nil:
			return err
		}
		evs := s.pending(c.Events)
		out := s.outgoing(evs)
		if c.Result != nil && len(evs) > 0 && s.refused == nil && s.completeTakesEvents {
			done, err := s.completeWith(ctx, bo, c.Result, out)
			if err != nil {
				return err
			}
			if done {
				s.w.metrics.delivered(ctx, evs)
				s.ob.Ack(c)
				continue
			}
			// Refused: the calls one at a time below say whether the
			// output or the result was refused, and whether output the
			// server did not store can still be delivered.
		}
		if len(evs) > 0 && s.refused == nil {
			err := s.retry(ctx, bo, "publish output", func() error {
				resp, err := s.w.publisher(out).PublishEvents(ctx, connect.NewRequest(&spoolv1.PublishEventsRequest{TaskToken: s.token,
					Events: out.messages, EncodedEvents: out.encoded}))
				if err == nil && s.onWatched != nil {
					s.onWatched(resp.Msg.GetWatched())
				}
				return err
			})
			switch {
			case errors.Is(err, errLeaseLost):
				// Counted here: read again, the chunk would be counted twice.
				s.ob.Ack(c)
				return s.undelivered(ctx, evs)
			case connect.CodeOf(err) == connect.CodeInvalidArgument:
				// A bug or a config the store cannot hold: retrying will
				// not help, and later events would leave a gap. Stop the
				// attempt and report why in its result.
				s.refused = fmt.Errorf("the server refused the job's output: %w", err)
				s.log.Error("output refused; stopping the job", "error", err)
				if s.onRefused != nil {
					s.onRefused(s.refused)
				}
			case err != nil:
				return err
			default:
				s.w.metrics.delivered(ctx, evs)
				lastSent = time.Time{}
				if !c.Full {
					lastSent = s.pace.now()
				}
			}
		}
		if c.Result != nil {
			res := c.Result
			if s.refused != nil {
				res.Error = s.refused.Error()
			}
			err := s.retry(ctx, bo, "complete the job", func() error {
				_, err := s.w.completions.complete(ctx, &spoolv1.CompleteJobRequest{TaskToken: s.token, Result: res})
				return err
			})
			if errors.Is(err, errLeaseLost) {
				// The output is delivered; only this attempt's result had
				// nowhere to go: the job had moved on.
				s.log.Info("the job moved on before this attempt's result was recorded", "error", err)
				_ = s.ob.Remove()
				return errLeaseLost
			}
			if err != nil {
				return err
			}
		}
		s.ob.Ack(c)
	}
}

// completeWith sends the attempt's result with its last events in one
// CompleteJob. It reports whether that ended the attempt on the server;
// when it did not (the server refused the call, or, being older than the
// lease said, did not store the events), the events and the result are to
// be sent one call at a time. Its only error is ctx's.
func (s *sender) completeWith(ctx context.Context, bo *pauses, res *spoolv1.JobResult, out outgoing) (done bool, err error) {
	var job *spoolv1.Job
	err = s.retry(ctx, bo, "complete the job", func() error {
		req := &spoolv1.CompleteJobRequest{TaskToken: s.token, Result: res, Events: out.messages, EncodedEvents: out.encoded}
		var err error
		if out.messages != nil {
			// Sent as messages, to a server that predates encoded events:
			// compressed, and alone.
			var resp *connect.Response[spoolv1.CompleteJobResponse]
			if resp, err = s.w.publisher(out).CompleteJob(ctx, connect.NewRequest(req)); err == nil {
				job = resp.Msg.GetJob()
			}
			return err
		}
		job, err = s.w.completions.complete(ctx, req)
		return err
	})
	switch {
	case ctx.Err() != nil:
		return false, ctx.Err()
	case err != nil:
		s.log.Info("the server refused the result with the job's last output; sending them one at a time", "error", err)
		return false, nil
	case job.GetLastSequence() < out.last:
		// Only a server that ignores events sent with a completion answers
		// so: what they say is lost must be reported, never silent.
		s.log.Error("the server did not store the output sent with the job's result", "last_sequence", job.GetLastSequence())
		return false, nil
	}
	return true, nil
}

// outgoing is a chunk's events as they are sent: encoded, for a server
// that takes them so, or as messages.
type outgoing struct {
	messages []*spoolv1.JobEvent
	encoded  [][]byte
	last     int64 // the last sequence the events cover
}

// outgoing prepares events to send. They are encoded once, however often
// the call is retried.
func (s *sender) outgoing(evs []outbox.Event) outgoing {
	if len(evs) == 0 {
		return outgoing{}
	}
	out := outgoing{last: evs[len(evs)-1].EndSequence()}
	if s.encoded {
		enc := make([][]byte, len(evs))
		for i, ev := range evs {
			b, err := ev.Encode()
			if err != nil {
				// Sent as a message, the server says what is wrong.
				out.messages = outbox.Messages(evs)
				return out
			}
			enc[i] = b
		}
		out.encoded = enc
		return out
	}
	out.messages = outbox.Messages(evs)
	return out
}

// releaseJob hands the job back.
func (s *sender) releaseJob(ctx context.Context, bo *pauses, hb *handBack) error {
	return s.retry(ctx, bo, "hand the job back", func() error {
		_, err := s.w.rpc.ReleaseJob(ctx, connect.NewRequest(&spoolv1.ReleaseJobRequest{TaskToken: s.token, Reason: hb.reason, CountAttempt: hb.count}))
		return err
	})
}

// undelivered deals with output the server refused because another attempt
// owns the job: the attempt is stopped, what is left in the outbox is
// counted, the loss recorded on the job, and the outbox kept aside (not
// resumed again) and named in a warning. Never silent.
func (s *sender) undelivered(ctx context.Context, refused []outbox.Event) error {
	if s.onLost != nil {
		s.onLost("another attempt owns the job")
	}
	var lost tally
	lost.add(refused, 0)
	for {
		c, err := s.ob.Next(ctx, publishMaxEvents, publishMaxBytes)
		if err != nil {
			if !errors.Is(err, io.EOF) && !errors.Is(err, outbox.ErrBroken) {
				return err
			}
			break
		}
		lost.add(c.Events, 0)
		s.ob.Ack(c)
	}
	return s.keepLost(ctx, lost.lines, lost.other)
}

// tally counts output lines and other events that could not be delivered.
type tally struct{ lines, other int64 }

// add counts the events of evs that end after sequence stored.
func (t *tally) add(evs []outbox.Event, stored int64) {
	for _, ev := range evs {
		if ev.EndSequence() <= stored {
			continue
		}
		if n := ev.LineCount(); n > 0 {
			t.lines += n
		} else {
			t.other++
		}
	}
}

// keepLost moves the outbox aside, reports the loss to the server, and
// warns, naming where the output is kept.
func (s *sender) keepLost(ctx context.Context, lines, other int64) error {
	kept, err := s.ob.Keep(s.w.undeliveredDir())
	if err != nil {
		s.log.Error("cannot keep the undelivered output aside", "outbox", s.ob.Path(), "error", err)
		kept = s.ob.Path()
	}
	host, _ := os.Hostname()
	rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	_, rerr := s.w.rpc.ReportUndelivered(rctx, connect.NewRequest(&spoolv1.ReportUndeliveredRequest{TaskToken: s.token,
		Lines: lines, Events: other, KeptAt: strings.TrimPrefix(host+":"+kept, ":")}))
	s.log.Warn("output could not be delivered: the job had moved on to another attempt; it is kept on disk",
		"lines", lines, "events", other, "kept_at", kept, "recorded_on_job", rerr == nil)
	s.w.pruneUndelivered()
	return errLeaseLost
}

// pending drops events the server already has.
func (s *sender) pending(evs []outbox.Event) []outbox.Event {
	for len(evs) > 0 && evs[0].EndSequence() <= s.skipThrough {
		evs = evs[1:]
	}
	return evs
}

// leaseGone reports whether err means the attempt may not go on: its lease
// is stale, the job is gone, or the server no longer accepts its token
// (for example, it was restarted with a new key).
func leaseGone(err error) bool {
	var ce *connect.Error
	if !errors.As(err, &ce) {
		return false
	}
	switch ce.Code() {
	case connect.CodeFailedPrecondition, connect.CodeNotFound:
		return true
	case connect.CodeInvalidArgument:
		return strings.HasPrefix(ce.Message(), "task_token")
	}
	return false
}

// retry calls fn until it succeeds, the lease is lost (errLeaseLost), the
// request is refused (InvalidArgument, returned), the worker's key is
// refused (returned, and the worker stopped), or ctx ends.
func (s *sender) retry(ctx context.Context, bo *pauses, what string, fn func() error) error {
	warned := false
	for {
		err := fn()
		switch code := connect.CodeOf(err); {
		case err == nil:
			if warned {
				s.log.Info("server reachable again; output is flowing", "what", what)
			}
			bo.reset()
			return nil
		case ctx.Err() != nil:
			return ctx.Err()
		case leaseGone(err):
			return fmt.Errorf("%w: %w", errLeaseLost, err)
		case code == connect.CodeInvalidArgument:
			return err
		case isKeyRefusal(err):
			s.w.refuseKey(err)
			return err
		}
		if !warned {
			s.log.Warn("cannot reach the server; output is kept on disk and retried", "what", what, "error", err)
			warned = true
		}
		if err := backoff.Sleep(ctx, bo.after(err)); err != nil {
			return err
		}
	}
}

// pauses are how long the sender waits before it tries again. While the
// server cannot be reached (restarting, a network blip) it tries again
// within a second, jittered, so output held on disk flows again within a
// second of the server's return; only a server that says "slow down"
// (ResourceExhausted) makes it back off for longer, up to 15 s.
type pauses struct {
	away, slowDown *backoff.Backoff
}

func newPauses() *pauses {
	return &pauses{away: backoff.New(100*time.Millisecond, time.Second), slowDown: backoff.New(time.Second, 15*time.Second)}
}

// after returns the pause after a failure with err.
func (p *pauses) after(err error) time.Duration {
	if connect.CodeOf(err) == connect.CodeResourceExhausted {
		return p.slowDown.Delay()
	}
	return p.away.Delay()
}

// reset starts both over, after a success.
func (p *pauses) reset() {
	p.away.Reset()
	p.slowDown.Reset()
}
