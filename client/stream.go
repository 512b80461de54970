package client

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"time"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/spool-run/spool"
	spoolv1 "github.com/spool-run/spool/gen/spool/v1"
	"github.com/spool-run/spool/internal/backoff"
	"github.com/spool-run/spool/internal/convert"
	"github.com/spool-run/spool/internal/events"
)

// StreamOptions says where a stream of a job's events starts, what it
// carries and whether it waits for more.
type StreamOptions struct {
	// Start at this sequence (0 or 1: from the beginning).
	FromSequence int64
	// Start at this output line instead (0: not used). Events before the
	// line are skipped, including the PROCESS_START of earlier attempts.
	FromLine int64
	// Skip events (and lines) written before this time (zero: not used).
	FromTime time.Time
	// Leave out events (and lines) written after this time (zero: not
	// used). A followed stream ends once it has everything written up to
	// then, though the job goes on: at the first line written later, or,
	// when the job prints nothing more, a flush interval of the job's after
	// the time (lines reach the server a while after they are written).
	UntilTime time.Time
	// Only these types of event (none: all).
	Types []spool.EventType
	// Keep going with new events until the job finishes. Without it, the
	// stream ends after the events stored when it was opened.
	Follow bool
	// How to ride out the server restarting or the connection dropping.
	Reconnect Reconnect
}

// EventStream is a job's event log read from a starting point and, when
// following, kept open until the job finishes.
//
// Each range over All or Batches opens a stream of its own from the
// options' start. When the connection fails in a way a retry can fix (see
// Reconnect), the stream reconnects on its own and resumes after the last
// event it received, so the consumer sees every sequence exactly once and
// in order, across server restarts. While the consumer handles one message,
// the next is already being received; at most one message is held ahead,
// so memory stays bounded however far behind the consumer is (the server
// then slows down to the consumer's pace). Breaking out of the loop closes
// the stream. One goroutine at a time may range over an EventStream.
type EventStream struct {
	c        *Client
	ctx      context.Context
	jobID    string
	opts     StreamOptions
	finished *spool.Job
}

// Events returns the stream of job jobID's events described by opts. Nothing
// is sent until it is ranged over.
//
//	s := c.Events(ctx, id, client.StreamOptions{FromLine: 9000, Follow: true})
//	for ev, err := range s.All() {
//		if err != nil {
//			return err
//		}
//		for _, line := range ev.Lines {
//			fmt.Printf("%d: %s\n", line.Number, line.Text)
//		}
//	}
//	fmt.Println("ended:", s.Finished().State)
func (c *Client) Events(ctx context.Context, jobID string, opts StreamOptions) *EventStream {
	return &EventStream{c: c, ctx: ctx, jobID: jobID, opts: opts}
}

// Lines yields job jobID's output lines from where opts says to start,
// following the job until it ends when opts.Follow is set; events that
// are not output are left out (opts.Types is not used). An error ends the
// iteration. For how the job ended, range over Events and ask
// EventStream.Finished.
//
//	for line, err := range c.Lines(ctx, id, client.StreamOptions{Follow: true}) {
//		if err != nil {
//			return err
//		}
//		fmt.Println(line.Text)
//	}
func (c *Client) Lines(ctx context.Context, jobID string, opts StreamOptions) iter.Seq2[spool.Line, error] {
	opts.Types = []spool.EventType{spool.EventOutput}
	return func(yield func(spool.Line, error) bool) {
		for ev, err := range c.Events(ctx, jobID, opts).Batches() {
			if err != nil {
				yield(spool.Line{}, err)
				return
			}
			for _, l := range ev.Lines {
				if !yield(l, nil) {
					return
				}
			}
		}
	}
}

// ReadLog returns a job's whole stored log, one event per output line,
// without waiting for more: for a finished job, everything it produced.
func (c *Client) ReadLog(ctx context.Context, jobID string) ([]*spool.Event, error) {
	var log []*spool.Event
	for ev, err := range c.Events(ctx, jobID, StreamOptions{}).All() {
		if err != nil {
			return nil, err
		}
		log = append(log, ev)
	}
	return log, nil
}

// Finished returns the job as it ended, when the last iteration ended
// because the job finished and every event had been received (always the
// case for a followed stream that ended without error, unless it ended at
// its UntilTime). It is nil otherwise: the stream was not following and
// the job was still live, it reached its UntilTime first, or the
// iteration stopped early or failed.
func (s *EventStream) Finished() *spool.Job { return s.finished }

// All yields the job's events one by one: each output line as an output
// event of its own, with that one line, other events as they are. Batches
// travel over the network as batches and are unpacked here. An error ends
// the iteration.
func (s *EventStream) All() iter.Seq2[*spool.Event, error] {
	return s.converted(convert.PerLine)
}

// Batches yields the job's events as they were stored: each output event
// with the lines the worker sent together (the first one trimmed to the
// start point), for consumers that handle output a batch at a time (a
// terminal written to once per batch, a forwarder). An error ends the
// iteration.
func (s *EventStream) Batches() iter.Seq2[*spool.Event, error] {
	return s.converted(func(unpacked []*spoolv1.JobEvent) []*spool.Event {
		if ev := convert.Batch(unpacked); ev != nil {
			return []*spool.Event{ev}
		}
		return nil
	})
}

// converted yields the stored events unpacked (each straight from its
// protobuf into its lines) and made spool's events by conv.
func (s *EventStream) converted(conv func([]*spoolv1.JobEvent) []*spool.Event) iter.Seq2[*spool.Event, error] {
	return func(yield func(*spool.Event, error) bool) {
		for st, err := range s.stored() {
			var unpacked []*spoolv1.JobEvent
			if err == nil {
				unpacked, err = st.Unpack()
			}
			if err != nil {
				yield(nil, err)
				return
			}
			for _, ev := range conv(unpacked) {
				if !yield(ev, nil) {
					return
				}
			}
		}
	}
}

// stored yields the job's events as they came: a batch sent as stored is
// decoded only as far as its consumer needs (Batches decodes it, All
// unpacks it straight into lines).
func (s *EventStream) stored() iter.Seq2[*events.Stored, error] {
	return func(yield func(*events.Stored, error) bool) {
		s.finished = nil
		ctx, cancel := context.WithCancel(s.ctx)
		out := make(chan delivery)
		done := make(chan struct{})
		r := newReceiver(s.c, s.jobID, s.opts)
		go func() {
			defer close(done)
			r.run(ctx, out)
		}()
		// The receiver stops when the consumer does; wait for it so the
		// connection is closed when the loop is left.
		defer func() {
			cancel()
			<-done
		}()
		for d := range out {
			switch {
			case d.ev != nil:
				if !yield(d.ev, nil) {
					return
				}
			case d.lost != nil:
				s.c.log.Info("spool: lost the stream of a job's events; reconnecting", "job_id", s.jobID, "error", d.lost, "wait", d.wait)
				if on := s.opts.Reconnect.OnRetry; on != nil {
					on(d.lost, d.wait)
				}
			case d.err != nil:
				yield(nil, d.err)
				return
			default:
				s.finished = convert.Job(d.finished)
				return
			}
		}
		// The receiver only closes without a last word when the context
		// ended first.
		yield(nil, s.ctx.Err())
	}
}

// delivery is what the receiver hands the consumer: an event; a notice that
// the stream was lost and is reconnecting; or the end (an error, or a clean
// end with the finished job if there is one).
type delivery struct {
	ev       *events.Stored
	lost     error
	wait     time.Duration
	err      error
	finished *spoolv1.Job
}

// errEndedEarly is a followed stream that the server (or something between
// it and us) closed cleanly before the job finished: reconnecting resumes it.
var errEndedEarly = errors.New("the server closed the stream before the job finished")

// receiver runs the StreamEvents calls of one iteration, one message ahead
// of the consumer, reconnecting after transient failures.
type receiver struct {
	c     *Client
	jobID string
	opts  StreamOptions
	// next is the sequence to resume from: after the last event delivered
	// (or the requested start, until then). 0 while starting from a line.
	next  int64
	retry *retrier
	// reached: the server ended a followed stream at opts.UntilTime.
	reached bool
}

func newReceiver(c *Client, jobID string, opts StreamOptions) *receiver {
	r := &receiver{c: c, jobID: jobID, opts: opts, retry: newRetrier(opts.Reconnect)}
	if opts.FromLine <= 0 {
		r.next = max(1, opts.FromSequence)
	}
	return r
}

// request asks for what comes after everything delivered so far.
func (r *receiver) request() *spoolv1.StreamEventsRequest {
	req := &spoolv1.StreamEventsRequest{JobId: r.jobID, EventTypes: convert.EventTypesProto(r.opts.Types), Follow: r.opts.Follow, AcceptStoredEvents: true}
	if !r.opts.FromTime.IsZero() {
		req.FromTimestamp = timestamppb.New(r.opts.FromTime)
	}
	if !r.opts.UntilTime.IsZero() {
		req.UntilTimestamp = timestamppb.New(r.opts.UntilTime)
	}
	if r.next > 0 {
		req.FromSequence = r.next
	} else {
		req.FromLine = r.opts.FromLine
	}
	return req
}

// run streams until the end, sending deliveries to out, and closes out. It
// returns early, without a last delivery, when ctx ends.
func (r *receiver) run(ctx context.Context, out chan<- delivery) {
	defer close(out)
	send := func(d delivery) bool {
		select {
		case out <- d:
			return true
		case <-ctx.Done():
			return false
		}
	}
	for {
		began := time.Now()
		finished, err := r.once(ctx, send)
		if ctx.Err() != nil {
			return
		}
		switch {
		case err == nil && (finished != nil || !r.opts.Follow || r.reached):
			send(delivery{finished: finished})
			return
		case err == nil:
			err = errEndedEarly
		case !isTransient(err):
			send(delivery{err: wrap(err)})
			return
		}
		// A connection that stayed up a while was working: its loss is a
		// new incident, not one more failure of the last one (a quiet
		// followed job may receive nothing for hours).
		if time.Since(began) > r.retry.policy.Max {
			r.retry.progress()
		}
		wait, ok := r.retry.next()
		if !ok {
			send(delivery{err: fmt.Errorf("gave up reading job %s's events after %s without progress: %w", r.jobID, r.retry.policy.GiveUpAfter, wrap(err))})
			return
		}
		if !send(delivery{lost: err, wait: wait}) || backoff.Sleep(ctx, wait) != nil {
			return
		}
	}
}

// once makes one StreamEvents call and delivers what it receives. It returns
// the finished job when the server sent it, else why the call ended (nil:
// the server closed the stream).
func (r *receiver) once(ctx context.Context, send func(delivery) bool) (*spoolv1.Job, error) {
	stream, err := r.c.streams.StreamEvents(ctx, connect.NewRequest(r.request()))
	if err != nil {
		return nil, err
	}
	defer stream.Close()
	for stream.Receive() {
		r.retry.progress()
		m := stream.Msg()
		if job := m.GetFinishedJob(); job != nil {
			return job, nil
		}
		if m.GetUntilReached() {
			r.reached = true
			return nil, nil
		}
		for _, b := range m.GetStoredEvents() {
			st, err := events.DecodeStored(b)
			if err == nil {
				err = r.deliver(st, send)
			}
			if err != nil {
				return nil, err
			}
		}
		if ev := m.GetEvent(); ev != nil {
			if err := r.deliver(events.StoredOf(ev), send); err != nil {
				return nil, err
			}
		}
	}
	return nil, stream.Err()
}

// deliver sends st on from where the iteration is. Its error ends the
// iteration: the context's, or a stored event that does not decode.
func (r *receiver) deliver(st *events.Stored, send func(delivery) bool) error {
	// The server starts where it was asked to; trimming again here keeps
	// the exactly-once promise even if a batch overlapping the resume
	// point came back whole.
	if r.next > 0 {
		var err error
		if st, err = st.TrimBefore(r.next); err != nil {
			return fmt.Errorf("event sent as stored: %w", err)
		}
		if st == nil {
			return nil
		}
	}
	r.next = st.EndSequence + 1
	if !send(delivery{ev: st}) {
		return context.Canceled
	}
	return nil
}
