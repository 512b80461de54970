package worker

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"time"

	"connectrpc.com/connect"

	"github.com/spool-run/spool/client"
	spoolv1 "github.com/spool-run/spool/gen/spool/v1"
	"github.com/spool-run/spool/internal/backoff"
	"github.com/spool-run/spool/internal/events"
	"github.com/spool-run/spool/internal/outbox"
)

// Per PublishEvents call: enough to catch up quickly after an outage,
// small enough to stay far below the server's request limit.
const (
	publishMaxEvents = 64
	publishMaxBytes  = 8 << 20
)

// sender drains one attempt's outbox to the server, in order, retrying
// until each call is acknowledged. PublishEvents and CompleteJob are
// idempotent, so a retry after a lost response changes nothing.
type sender struct {
	api   *client.Client
	ob    *outbox.Outbox
	token string
	log   *slog.Logger

	// skipThrough: events ending at or before this sequence are already
	// stored (a reopened outbox resends from its oldest segment).
	skipThrough int64

	onWatched func(bool)
	// onLost is told the lease is gone: the attempt must stop.
	onLost func(reason string)
	// onRefused is told the server refused the output for good.
	onRefused func(err error)

	refused error
}

// errLeaseLost ends a sender whose attempt was fenced off.
var errLeaseLost = errors.New("lease lost")

// run sends until the outbox is drained (nil), the lease is lost
// (errLeaseLost), or ctx ends (its error; the outbox stays on disk).
func (s *sender) run(ctx context.Context) error {
	bo := backoff.New(100*time.Millisecond, 15*time.Second)
	for {
		c, err := s.ob.Next(ctx, publishMaxEvents, publishMaxBytes)
		if err == io.EOF {
			return s.ob.Remove()
		}
		if err != nil {
			return err
		}
		evs := s.pending(c.Events)
		if len(evs) > 0 && s.refused == nil {
			err := s.retry(ctx, bo, "publish output", func() error {
				resp, err := s.api.PublishEvents(ctx, connect.NewRequest(&spoolv1.PublishEventsRequest{TaskToken: s.token, Events: evs}))
				if err == nil && s.onWatched != nil {
					s.onWatched(resp.Msg.GetWatched())
				}
				return err
			})
			if connect.CodeOf(err) == connect.CodeInvalidArgument {
				// A bug or a config the store cannot hold: retrying will
				// not help, and later events would leave a gap. Stop the
				// attempt and report why in its result.
				s.refused = fmt.Errorf("the server refused the job's output: %w", err)
				s.log.Error("output refused; stopping the job", "error", err)
				if s.onRefused != nil {
					s.onRefused(s.refused)
				}
			} else if err != nil {
				return err
			}
		}
		if c.Result != nil {
			res := c.Result
			if s.refused != nil {
				res.Error = s.refused.Error()
			}
			err := s.retry(ctx, bo, "complete the job", func() error {
				_, err := s.api.CompleteJob(ctx, connect.NewRequest(&spoolv1.CompleteJobRequest{TaskToken: s.token, Result: res}))
				return err
			})
			if err != nil {
				return err
			}
		}
		s.ob.Ack(c)
	}
}

// pending drops events the server already has.
func (s *sender) pending(evs []*spoolv1.JobEvent) []*spoolv1.JobEvent {
	for len(evs) > 0 && events.EndSequence(evs[0]) <= s.skipThrough {
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

// retry calls fn until it succeeds, the lease is lost, the request is
// refused (InvalidArgument, returned), or ctx ends.
func (s *sender) retry(ctx context.Context, bo *backoff.Backoff, what string, fn func() error) error {
	warned := false
	for {
		err := fn()
		switch code := connect.CodeOf(err); {
		case err == nil:
			if warned {
				s.log.Info("server reachable again; output is flowing", "what", what)
			}
			bo.Reset()
			return nil
		case ctx.Err() != nil:
			return ctx.Err()
		case leaseGone(err):
			if s.onLost != nil {
				s.onLost(err.Error())
			}
			_ = s.ob.Remove()
			return errLeaseLost
		case code == connect.CodeInvalidArgument:
			return err
		}
		if !warned {
			s.log.Warn("cannot reach the server; output is kept on disk and retried", "what", what, "error", err)
			warned = true
		}
		if err := bo.Wait(ctx); err != nil {
			return err
		}
	}
}
