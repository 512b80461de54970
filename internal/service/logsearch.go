package service

import (
	"context"
	"io"

	spoolv1 "github.com/spool-run/spool/gen/spool/v1"
	"github.com/spool-run/spool/internal/logsearch"
)

// Searching a job's log, and reading it whole as the job wrote it. Both
// read the stored log through a feed, as ReadLines does, so they see what
// every other reader sees, under the same permission (PermRead on the
// job's queue); package logsearch does the reading.

// SearchLog finds the lines of a job's stored log that contain a text
// (logsearch.Search), from r.After on.
func (s *Service) SearchLog(ctx context.Context, r logsearch.Request) (*logsearch.Result, error) {
	if err := logsearch.Check(r); err != nil {
		return nil, err
	}
	if r.After > MaxLine {
		return nil, invalid("line numbers go up to %d", int64(MaxLine))
	}
	feed, err := s.openFeed(ctx, &spoolv1.StreamEventsRequest{JobId: r.JobID, FromLine: r.After + 1,
		EventTypes: []spoolv1.EventType{spoolv1.EventType_EVENT_TYPE_OUTPUT_BATCH}}, 0)
	if err != nil {
		return nil, err
	}
	defer feed.Close()
	return logsearch.Search(feed.Job(), feed.Events(ctx), r, MaxPageBytes)
}

// RawLog is a job's output as the job wrote it (logsearch.Copy).
type RawLog struct {
	feed *Feed
}

// OpenRawLog checks a request to read a job's whole log. A missing job,
// or one of a queue the caller may not read, is spool.ErrNotFound, before
// anything is read.
func (s *Service) OpenRawLog(ctx context.Context, jobID string) (*RawLog, error) {
	feed, err := s.openFeed(ctx, &spoolv1.StreamEventsRequest{JobId: jobID,
		EventTypes: []spoolv1.EventType{spoolv1.EventType_EVENT_TYPE_OUTPUT_BATCH}}, 0)
	if err != nil {
		return nil, err
	}
	return &RawLog{feed: feed}, nil
}

// Job is the job as it was when the log was opened.
func (r *RawLog) Job() *spoolv1.Job { return r.feed.Job() }

// Close releases the log's feed.
func (r *RawLog) Close() { r.feed.Close() }

// Copy writes the log to w as it reads it, one stored page at a time,
// so a log of any length costs the memory of a page. For a job still
// running it writes what is stored until it reaches the end, and stops
// there. An error may come after some of the log was written.
func (r *RawLog) Copy(ctx context.Context, w io.Writer) (int64, error) {
	return logsearch.Copy(w, r.feed.Events(ctx))
}
