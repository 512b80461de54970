package awsstore

import (
	"context"
	"errors"
	"fmt"
	"iter"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/spool-run/spool"
	"github.com/spool-run/spool/internal/events"
	"github.com/spool-run/spool/internal/store"
	"github.com/spool-run/spool/internal/store/storekit"
)

// readPage is how many items a read asks DynamoDB for at a time (which
// also stops at 1 MB).
const readPage = 100

// ReadStored implements store.JobStore. It reads the job first, strongly
// consistently (once for all the reads of a session): its committed head
// bounds the read (items past it belong to an append not yet committed)
// and its holes are skipped. Then:
//
//   - from a sequence, it queries the table forward from it. When the
//     first item found does not start there, the sequence is inside an
//     item (a batch): the last item starting before it, found by one
//     descending query of one item no further back than the batch floor
//     (max(1, from - max_batch_size + 1), with the job's own
//     max_batch_size), comes first. A read that starts where an item
//     starts (every page of a feed after its first) costs one query.
//   - from a line L, one query of the by-line index finds the first output
//     item whose last line is at least L-1: if it ends at L-1 the read
//     starts right after it (events between it and line L, such as a
//     PROCESS_END, follow line L-1), else at it (it holds line L).
//
// Every query asks for no more items than the read's Limit still allows.
// Every read is strongly consistent, so a reader woken by a commit sees it.
// ReadStats counts every event item DynamoDB returned, including the index
// lookup and anything skipped; the job item is not an event and is not
// counted.
func (s *Store) ReadStored(ctx context.Context, req store.ReadRequest) iter.Seq2[*events.Stored, error] {
	return func(yield func(*events.Stored, error) bool) {
		r, err := s.readBound(ctx, req)
		if errors.Is(err, spool.ErrNotFound) {
			return // unknown jobs have empty logs
		}
		if err != nil {
			yield(nil, err)
			return
		}
		from, inside, ok, err := s.seek(ctx, r, req)
		if err != nil {
			yield(nil, err)
			return
		}
		if !ok {
			return
		}
		s.readFrom(ctx, r, req, from, inside, yield)
	}
}

// readBound reads the job a read is bounded by (its head, its holes), or
// takes it from the read's session, where the session's first read left
// it: the pages of one pass over a log read the job once.
func (s *Store) readBound(ctx context.Context, req store.ReadRequest) (*jobRec, error) {
	if req.Session != nil {
		if r, ok := req.Session.Store.(*jobRec); ok && r.id() == req.JobID {
			return r, nil
		}
	}
	r, err := s.getJob(ctx, req.JobID)
	if err == nil && req.Session != nil {
		req.Session.Store = r
	}
	return r, err
}

// seek returns the sequence to query from, and whether it may be inside an
// item that starts before it; ok is false when there is nothing to read.
func (s *Store) seek(ctx context.Context, r *jobRec, req store.ReadRequest) (from int64, inside, ok bool, err error) {
	end := r.head.NextSequence // exclusive
	if req.FromLine > 1 {
		if req.FromLine > r.head.NextLine {
			return 0, false, false, nil // past the last line and whatever follows it
		}
		from, err = s.seekLine(ctx, r, req)
		return from, false, err == nil && from > 0 && from < end, err
	}
	if req.FromLine == 1 {
		return 1, false, end > 1, nil
	}
	want := max(req.FromSequence, 1)
	return want, want > 1, want < end, nil
}

// seekLine returns the first sequence to read from line req.FromLine (at
// least 2), or 0 if none is stored.
func (s *Store) seekLine(ctx context.Context, r *jobRec, req store.ReadRequest) (int64, error) {
	e := newExpr()
	in := &dynamodb.QueryInput{
		TableName: aws.String(s.cfg.EventsTable),
		IndexName: aws.String(indexByLine),
		KeyConditionExpression: aws.String(and(e.eq(aJobID, str(r.id())),
			e.n(aLastLine)+" >= "+e.v(num(req.FromLine-1)))),
		ConsistentRead: aws.Bool(true),
		// One item answers, unless it is not part of the committed log (in
		// a hole, past the head, or past its attempt's part).
		Limit: aws.Int32(1),
	}
	in.ExpressionAttributeNames, in.ExpressionAttributeValues = e.names, e.values
	parts := r.parts()
	for p := dynamodb.NewQueryPaginator(s.clients.db, in); p.HasMorePages(); {
		page, err := p.NextPage(ctx)
		if err != nil {
			return 0, awsErr(err, "find line %d of job %s", req.FromLine, r.id())
		}
		if req.Stats != nil {
			req.Stats.ItemsRead += len(page.Items)
		}
		for _, it := range page.Items {
			n := ints{it: it}
			key, last := n.get(aSequence), n.get(aLastLine)
			if n.err != nil {
				return 0, n.err
			}
			seq, ok := locate(parts, r.inHole, key)
			if !ok {
				continue
			}
			if last == req.FromLine-1 {
				return seq + 1, nil
			}
			return seq, nil
		}
	}
	return 0, nil
}

// readFrom queries the committed log from sequence from and yields its
// items, part by part (see jobRec.parts), skipping holes; when inside is
// set and no item starts at from, the item holding from comes first.
//
// An item that starts inside the one yielded before it is skipped: it was
// left by a publish that died before its commit, and the worker's resend,
// cut into batches differently, covers the same events (a resend carries
// the same events at the same sequences, so nothing else can overlap).
func (s *Store) readFrom(ctx context.Context, r *jobRec, req store.ReadRequest, from int64, inside bool, yield func(*events.Stored, error) bool) {
	yielded := 0
	next := from // the first sequence not yet yielded
	// emit yields the item keyed at base+seq unless it is not to be read;
	// more is false when the read is over.
	emit := func(it item, base int64) (more bool) {
		n := ints{it: it}
		seq, end := n.get(aSequence)-base, n.get(aEndSeq)
		if n.err != nil {
			yield(nil, n.err)
			return false
		}
		if r.inHole(seq) || (seq < next && yielded > 0) {
			return true
		}
		ev, err := storekit.ItemFromPayload(getBin(it, aPayload), seq)
		if err != nil {
			yield(nil, fmt.Errorf("job %s: %w", r.id(), err))
			return false
		}
		yielded++
		next = max(end+1, seq+1)
		return yield(ev, nil) && (req.Limit <= 0 || yielded < req.Limit)
	}
	for _, p := range r.parts() {
		if p.to <= from {
			continue
		}
		lo := max(from, p.from)
		// Items of this part start at lo or later: an item of the part
		// before cannot hide them.
		next = lo
		if !s.readPart(ctx, r, req, p, lo, inside && lo == from, &yielded, emit, yield) {
			return
		}
	}
}

// readPart queries one part of the log from sequence from, handing each
// item to emit; when inside is set and no item starts at from, the item
// holding from comes first. It reports whether the read goes on.
func (s *Store) readPart(ctx context.Context, r *jobRec, req store.ReadRequest, p part, from int64, inside bool, yielded *int,
	emit func(item, int64) bool, yield func(*events.Stored, error) bool) bool {
	e := newExpr()
	in := &dynamodb.QueryInput{
		TableName: aws.String(s.cfg.EventsTable),
		KeyConditionExpression: aws.String(and(e.eq(aJobID, str(r.id())),
			e.n(aSequence)+" BETWEEN "+e.v(num(p.base+from))+" AND "+e.v(num(p.base+p.to-1)))),
		ConsistentRead: aws.Bool(true),
	}
	in.ExpressionAttributeNames, in.ExpressionAttributeValues = e.names, e.values
	for {
		limit := readPage
		if req.Limit > 0 {
			limit = min(limit, req.Limit-*yielded)
		}
		in.Limit = aws.Int32(int32(limit))
		page, err := s.clients.db.Query(ctx, in)
		if err != nil {
			yield(nil, awsErr(err, "read events of job %s", r.id()))
			return false
		}
		if req.Stats != nil {
			req.Stats.ItemsRead += len(page.Items)
		}
		if inside {
			inside = false
			var first int64
			if len(page.Items) > 0 {
				if first, err = getInt(page.Items[0], aSequence); err != nil {
					yield(nil, err)
					return false
				}
			}
			if first != p.base+from {
				it, found, err := s.itemHolding(ctx, r, req, p, from)
				if err != nil {
					yield(nil, err)
					return false
				}
				if found && !emit(it, p.base) {
					return false
				}
				if req.Limit > 0 && *yielded >= req.Limit {
					return false
				}
			}
		}
		for _, it := range page.Items {
			if !emit(it, p.base) {
				return false
			}
		}
		if page.LastEvaluatedKey == nil {
			return true
		}
		in.ExclusiveStartKey = page.LastEvaluatedKey
	}
}

// itemHolding returns the item of part p that starts before sequence seq
// and holds it, if one is stored: the last item starting before seq, no
// further back than the batch floor or the part's start.
func (s *Store) itemHolding(ctx context.Context, r *jobRec, req store.ReadRequest, p part, seq int64) (item, bool, error) {
	floor := p.from
	if size := int64(r.spec.GetExecutionConfig().GetBatching().GetMaxBatchSize()); size > 0 {
		floor = max(floor, events.BatchFloor(seq, size))
	}
	if floor >= seq {
		return nil, false, nil
	}
	e := newExpr()
	in := &dynamodb.QueryInput{
		TableName: aws.String(s.cfg.EventsTable),
		KeyConditionExpression: aws.String(and(e.eq(aJobID, str(r.id())),
			e.n(aSequence)+" BETWEEN "+e.v(num(p.base+floor))+" AND "+e.v(num(p.base+seq-1)))),
		ScanIndexForward: aws.Bool(false),
		ConsistentRead:   aws.Bool(true),
		Limit:            aws.Int32(1),
	}
	in.ExpressionAttributeNames, in.ExpressionAttributeValues = e.names, e.values
	page, err := s.clients.db.Query(ctx, in)
	if err != nil {
		return nil, false, awsErr(err, "find event %d of job %s", seq, r.id())
	}
	if req.Stats != nil {
		req.Stats.ItemsRead += len(page.Items)
	}
	if len(page.Items) == 0 {
		return nil, false, nil
	}
	it := page.Items[0]
	n := ints{it: it}
	if end := n.get(aEndSeq); n.err != nil || end < seq {
		return nil, false, n.err
	}
	return it, true, nil
}
