package client

import (
	"context"
	"time"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/proto"

	"github.com/spool-run/spool"
	spoolv1 "github.com/spool-run/spool/gen/spool/v1"
	"github.com/spool-run/spool/internal/convert"
)

// Queues returns every queue, by name, with its jobs queued and running
// now, those that ended within window, its oldest waiting job and the
// workers polling it.
func (c *Client) Queues(ctx context.Context) (queues []*spool.Queue, window time.Duration, err error) {
	return c.queues(ctx, false)
}

// QueuesEndedPerMinute is Queues with each queue's EndedPerMinute too: its
// jobs ended in each of the last 60 minutes, by final state, as the web
// UI's queues page charts them. It costs the server a read of the jobs
// ended in the hour, so ask only to show them.
func (c *Client) QueuesEndedPerMinute(ctx context.Context) (queues []*spool.Queue, window time.Duration, err error) {
	return c.queues(ctx, true)
}

func (c *Client) queues(ctx context.Context, perMinute bool) (queues []*spool.Queue, window time.Duration, err error) {
	resp, err := c.qs.ListQueues(ctx, connect.NewRequest(&spoolv1.ListQueuesRequest{EndedPerMinute: perMinute}))
	if err != nil {
		return nil, 0, wrap(err)
	}
	return convert.Queues(resp.Msg.GetQueues()), time.Duration(resp.Msg.GetWindowSeconds()) * time.Second, nil
}

// PauseQueue stops workers from taking the queue's jobs; running jobs go
// on. Needs an admin key. A name that is no queue (no job names it, no
// worker polls it) is spool.ErrNotFound, whose message lists the queues.
func (c *Client) PauseQueue(ctx context.Context, name string) (*spool.Queue, error) {
	resp, err := c.qs.PauseQueue(ctx, connect.NewRequest(&spoolv1.PauseQueueRequest{Name: name}))
	if err != nil {
		return nil, wrap(err)
	}
	return convert.Queue(resp.Msg.GetQueue()), nil
}

// ResumeQueue lets workers take a paused queue's jobs again. Needs an
// admin key; a name that is no queue is spool.ErrNotFound.
func (c *Client) ResumeQueue(ctx context.Context, name string) (*spool.Queue, error) {
	resp, err := c.qs.ResumeQueue(ctx, connect.NewRequest(&spoolv1.ResumeQueueRequest{Name: name}))
	if err != nil {
		return nil, wrap(err)
	}
	return convert.Queue(resp.Msg.GetQueue()), nil
}

// QueueConfig is what ConfigureQueue changes of a queue. A nil field is
// left as it is.
type QueueConfig struct {
	// MaxRunning is the most of the queue's jobs that run at once, across
	// every worker and server (0: no limit; at most 10000). Lowering it
	// stops no running job: no more start until fewer than it run.
	MaxRunning *int
}

// ConfigureQueue changes a queue's settings for every server sharing the
// store, and returns the queue as it is then. A queue no job names yet
// may be configured. Needs a key that may pause the queue.
func (c *Client) ConfigureQueue(ctx context.Context, name string, cfg QueueConfig) (*spool.Queue, error) {
	req := &spoolv1.ConfigureQueueRequest{Name: name}
	if n := cfg.MaxRunning; n != nil {
		if err := fits("MaxRunning", *n); err != nil {
			return nil, err
		}
		req.MaxRunning = proto.Int32(int32(*n))
	}
	resp, err := c.qs.ConfigureQueue(ctx, connect.NewRequest(req))
	if err != nil {
		return nil, wrap(err)
	}
	return convert.Queue(resp.Msg.GetQueue()), nil
}

// SetMaxRunning is ConfigureQueue of the queue's MaxRunning alone: at
// most n of its jobs run at once (0: no limit).
func (c *Client) SetMaxRunning(ctx context.Context, name string, n int) (*spool.Queue, error) {
	return c.ConfigureQueue(ctx, name, QueueConfig{MaxRunning: &n})
}
