package storekit

import (
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/spool-run/spool"
	spoolv1 "github.com/spool-run/spool/gen/spool/v1"
	"github.com/spool-run/spool/internal/apierr"
	"github.com/spool-run/spool/internal/events"
	"github.com/spool-run/spool/internal/store"
)

// The layout of ingested events, the same in every store and in a rebuild:
// each event's message becomes one line per "\n"-separated part, and a
// part longer than the job's max_batch_bytes becomes several pieces (all
// but the last partial, as a worker splits a long line), on stdout, at the
// event's time. The lines of one call fill batches of max_batch_size lines
// and max_batch_bytes bytes, from the log's head on. The layout depends only
// on the events, the job's batching config and the head the call began at
// (store.Accepted keeps that head's sequence as Group), so laying out the
// accepted events of a call again gives the very same batches.

// defaultIngestBatch is the batch size used when a job's batching config
// sets none (a worker's batcher has its own default for the same case).
const defaultIngestBatch = 50

// PlanIngest lays fresh events, none of them stored before, out at head as
// batches of attempt 1, and says what to store: the items (PlanAppend's
// plan, with the lines numbered) and each event's accepted record.
func PlanIngest(head store.Head, cfg *spoolv1.BatchingConfig, lim store.Limits, fresh []store.RawEvent) (AppendPlan, []store.Accepted, error) {
	maxLines := int(cfg.GetMaxBatchSize())
	if maxLines <= 0 {
		maxLines = defaultIngestBatch
	}
	maxBytes := cfg.GetMaxBatchBytes()
	accepted := make([]store.Accepted, len(fresh))
	var (
		evs     []*spoolv1.JobEvent
		batch   []events.Line
		size    int64
		seq     = head.NextSequence
		line    = head.NextLine
		flushed = func() {
			if len(batch) == 0 {
				return
			}
			evs = append(evs, events.Batch{Sequence: seq, Lines: batch}.Event())
			seq += int64(len(batch))
			batch, size = nil, 0
		}
	)
	for i, e := range fresh {
		accepted[i] = store.Accepted{RawEvent: e, Line: line, Group: head.NextSequence}
		for _, piece := range messageLines(e.Message, maxBytes) {
			n := int64(len(piece.Data))
			if len(batch) == maxLines || (maxBytes > 0 && size+n > maxBytes) {
				flushed()
			}
			piece.Time = e.Time
			batch = append(batch, piece)
			size += n
			line++
			accepted[i].Lines++
		}
	}
	flushed()
	plan, err := PlanAppend(head, 1, cfg, lim, events.Messages(evs...))
	if err != nil {
		return AppendPlan{}, nil, err
	}
	return plan, accepted, nil
}

// messageLines cuts a message into the lines it shows as: one per
// "\n"-separated part, each cut into pieces of at most maxBytes (0: no
// limit) at rune boundaries, all but a part's last piece partial.
func messageLines(msg string, maxBytes int64) []events.Line {
	var out []events.Line
	for part := range strings.SplitSeq(msg, "\n") {
		for maxBytes > 0 && int64(len(part)) > maxBytes {
			cut := runeCut(part, int(maxBytes))
			out = append(out, events.Line{Data: []byte(part[:cut]), Stream: spoolv1.StreamType_STREAM_TYPE_STDOUT, Partial: true})
			part = part[cut:]
		}
		out = append(out, events.Line{Data: []byte(part), Stream: spoolv1.StreamType_STREAM_TYPE_STDOUT})
	}
	return out
}

// runeCut is where to cut s to keep at most n bytes in the first piece
// without splitting a character: the last rune start at or before n, or n
// itself when no character starts in the last few bytes (s is not UTF-8
// there, or n is too small for one character).
func runeCut(s string, n int) int {
	for i := n; i > 0 && i > n-utf8.UTFMax; i-- {
		if utf8.RuneStart(s[i]) {
			return i
		}
	}
	return n
}

// RebuildEvents lays out the accepted events of an external job again, in
// line order (as store.IngestStore.Accepted yields them), call by call
// from the head each call began at: the events of the log they made. An
// accepted event that does not fall on the line it was stored at means the
// records are not those of one log, and is an error wrapping
// events.ErrCorrupt.
func RebuildEvents(cfg *spoolv1.BatchingConfig, lim store.Limits, accepted []store.Accepted) ([]*spoolv1.JobEvent, error) {
	var out []*spoolv1.JobEvent
	for i := 0; i < len(accepted); {
		j := i + 1
		for j < len(accepted) && accepted[j].Group == accepted[i].Group {
			j++
		}
		group := accepted[i:j]
		raw := make([]store.RawEvent, len(group))
		for k, a := range group {
			raw[k] = a.RawEvent
		}
		plan, laid, err := PlanIngest(store.Head{NextSequence: group[0].Group, NextLine: group[0].Line}, cfg, lim, raw)
		if err != nil {
			return nil, fmt.Errorf("laying out the events accepted at sequence %d again: %w", group[0].Group, err)
		}
		for k, a := range laid {
			if a.Line != group[k].Line || a.Lines != group[k].Lines {
				return nil, fmt.Errorf("event %q was stored at line %d (%d lines) but lays out at line %d (%d lines): %w",
					a.ID, group[k].Line, group[k].Lines, a.Line, a.Lines, events.ErrCorrupt)
			}
		}
		for _, it := range plan.Items {
			out = append(out, it.Event)
		}
		i = j
	}
	return out, nil
}

// StoredItems are the items of output events as they were stored (their
// sequences and line numbers assigned, as Read yields them or
// RebuildEvents makes them): what ReplaceLog writes to put them back.
func StoredItems(evs []*spoolv1.JobEvent, lim store.Limits) ([]Item, error) {
	items := make([]Item, len(evs))
	for i, ev := range evs {
		head := store.Head{NextSequence: ev.GetSequence(), NextLine: events.FirstLine(ev)}
		it, err := newItem(events.PublishedOf(ev), ev.GetAttempt(), head, lim)
		if err != nil {
			return nil, err
		}
		items[i] = it
	}
	return items, nil
}

// CheckIngest refuses an Ingest a store cannot keep right: besides
// NewJob.Check, it names a source, and the job it would create is of that
// source, or the source's events and its job would not find each other.
func CheckIngest(r store.IngestRequest) error {
	if err := r.Job.Check(); err != nil {
		return err
	}
	if r.Source == "" {
		return apierr.Errorf(spool.ErrInvalidArgument, "ingest names no source")
	}
	if got := r.Job.Params.GetExternal().GetSource(); got != r.Source {
		return apierr.Errorf(spool.ErrInvalidArgument, "ingest of source %q would create a job of source %q", r.Source, got)
	}
	return nil
}

// CheckReplace refuses ReplaceLog of a job that is not external: its log
// has no accepted events to be rebuilt from.
func CheckReplace(j *spoolv1.Job) error {
	if j.GetParams().GetExternal() == nil {
		return apierr.Errorf(spool.ErrInvalidArgument, "job %s is not external: its log has no accepted events to be rebuilt from", j.GetJobId())
	}
	return nil
}
