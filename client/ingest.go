package client

import (
	"context"

	"connectrpc.com/connect"

	"github.com/spool-run/spool"
	spoolv1 "github.com/spool-run/spool/gen/spool/v1"
	"github.com/spool-run/spool/internal/convert"
)

// External jobs hold the logs of programs spool did not start, sent to the
// server by Amazon Data Firehose or a log shipper (POST /api/v1/ingest/...).
// A source's job is read like any other (Job, Events, ReadLog); these calls
// end one and repair one.

// CompleteSource ends the open job of source: it succeeds, and followers of
// its log see the end. The source's later events open a new job. A source
// with no open job is spool.ErrNotFound. Needs a key of role ingest or
// admin.
func (c *Client) CompleteSource(ctx context.Context, source string) (*spool.Job, error) {
	return c.complete(ctx, &spoolv1.CompleteSourceRequest{Source: source})
}

// CompleteExternal ends the external job jobID (as CompleteSource does for
// its source); a job that has ended is returned as it is.
func (c *Client) CompleteExternal(ctx context.Context, jobID string) (*spool.Job, error) {
	return c.complete(ctx, &spoolv1.CompleteSourceRequest{JobId: jobID})
}

func (c *Client) complete(ctx context.Context, req *spoolv1.CompleteSourceRequest) (*spool.Job, error) {
	resp, err := c.ing.CompleteSource(ctx, connect.NewRequest(req))
	if err != nil {
		return nil, wrap(err)
	}
	return convert.Job(resp.Msg.GetJob()), nil
}

// Rebuilt is what RebuildLog found.
type Rebuilt struct {
	// Job is the external job whose log was rebuilt.
	Job *spool.Job
	// Events counts the accepted events the log was rebuilt from, Lines
	// and Items the lines and stored items they make.
	Events int64
	Lines  int64
	Items  int64
	// ItemsChanged counts the stored items that differed from the rebuilt
	// ones, were missing or were extra, and were rewritten or removed (0:
	// the stored log was already exactly what its events make).
	ItemsChanged int64
}

// RebuildLog rebuilds an external job's stored log from the events the
// server accepted for it, and says what it found. Needs an admin key.
func (c *Client) RebuildLog(ctx context.Context, jobID string) (*Rebuilt, error) {
	resp, err := c.ing.RebuildLog(ctx, connect.NewRequest(&spoolv1.RebuildLogRequest{JobId: jobID}))
	if err != nil {
		return nil, wrap(err)
	}
	m := resp.Msg
	return &Rebuilt{Job: convert.Job(m.GetJob()), Events: m.GetEvents(), Lines: m.GetLines(), Items: m.GetItems(), ItemsChanged: m.GetItemsChanged()}, nil
}
