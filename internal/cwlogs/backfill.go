package cwlogs

import (
	"context"
	"fmt"
	"time"

	"github.com/spool-run/spool/internal/ingest"
)

// Stored is what spool's lines endpoint answered to one post.
type Stored struct {
	// Accepted counts the events stored now; the others were there.
	Accepted int
	Sources  []SourceStored
}

// SourceStored is what a post did for one source.
type SourceStored struct {
	Source string
	// JobID is the external job the source's events went to; "" when all
	// were there already and the source has no open job.
	JobID    string
	Accepted int
	Opened   bool
}

// Send posts newline-delimited JSON events (ingest.AppendLine's) to
// spool's lines endpoint, and returns what it stored.
type Send func(ctx context.Context, lines []byte) (Stored, error)

// Summary is what a backfill did.
type Summary struct {
	// Read counts the events read from CloudWatch, Added those spool did
	// not have; the rest (Read-Added) were there already. Sent counts
	// those spool answered for: less than Read when a post failed.
	Read, Added, Sent int
	// Streams are the streams read, in the order their first event came.
	Streams []StreamSummary
}

// StreamSummary is what a backfill did for one stream, that is, one
// source of spool.
type StreamSummary struct {
	Source string
	// JobID is the last job its events went to ("": they were all there
	// and the source has no open job).
	JobID       string
	Read, Added int
	// Opened says the backfill opened a job for the source.
	Opened bool
}

// Progress is how far a backfill has come.
type Progress struct {
	Read, Added int
	// Through is the time of the last event read.
	Through time.Time
}

// DefaultMaxPostBytes bounds one post to spool, well under what a server
// takes by default (ingest.max_body_bytes, 16 MiB).
const DefaultMaxPostBytes = 4 << 20

// Backfill reads events from CloudWatch Logs and sends them to spool.
type Backfill struct {
	API    API
	Send   Send
	Limits ingest.Limits
	// MaxPostBytes bounds one post (0: DefaultMaxPostBytes); an event
	// longer than that goes alone in its post.
	MaxPostBytes int
	// Progress, if set, is told after each post.
	Progress func(Progress)
}

// Run reads what q names and sends it on, page by page: each stream's
// events go to its source's external job in CloudWatch's order. Events
// spool has (from a subscription, or an earlier backfill) are skipped by
// spool itself, which keeps each id of a source once; so a backfill can
// run again, or after an interrupted one, and adds only what is missing.
// An error stops it; what was sent before stays, and is summed up.
func (b Backfill) Run(ctx context.Context, q Query) (Summary, error) {
	var (
		sum     Summary
		streams = map[string]int{}
		buf     []byte
		pending int // events in buf
		prog    Progress
	)
	maxPost := b.MaxPostBytes
	if maxPost <= 0 {
		maxPost = DefaultMaxPostBytes
	}
	stream := func(source string) *StreamSummary {
		i, ok := streams[source]
		if !ok {
			i = len(sum.Streams)
			streams[source] = i
			sum.Streams = append(sum.Streams, StreamSummary{Source: source})
		}
		return &sum.Streams[i]
	}
	flush := func() error {
		if len(buf) == 0 {
			return nil
		}
		st, err := b.Send(ctx, buf)
		buf = buf[:0]
		if err != nil {
			return err
		}
		sum.Sent, pending = sum.Sent+pending, 0
		sum.Added += st.Accepted
		for _, src := range st.Sources {
			s := stream(src.Source)
			s.Added += src.Accepted
			s.Opened = s.Opened || src.Opened
			if src.JobID != "" {
				s.JobID = src.JobID
			}
		}
		prog.Added = sum.Added
		if b.Progress != nil {
			b.Progress(prog)
		}
		return nil
	}
	err := Read(ctx, b.API, q, b.Limits, func(evs []ingest.Event) error {
		for _, e := range evs {
			n := len(buf)
			var err error
			if buf, err = ingest.AppendLine(buf, e); err != nil {
				return fmt.Errorf("event %s of %s: %w", e.ID, e.Source, err)
			}
			if len(buf) > maxPost && n > 0 {
				// Over the bound with this event: send what came before it,
				// and start the next post with it.
				line := append([]byte(nil), buf[n:]...)
				buf = buf[:n]
				if err := flush(); err != nil {
					return err
				}
				buf = append(buf, line...)
			}
			pending++
			sum.Read++
			stream(e.Source).Read++
			prog.Read, prog.Through = sum.Read, e.Timestamp
		}
		// A page is sent before the next is read: what was read is in
		// spool as soon as can be, and an interrupted backfill leaves
		// little unsent.
		return flush()
	})
	return sum, err
}
