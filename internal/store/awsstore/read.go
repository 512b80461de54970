package awsstore

import (
	"context"
	"errors"
	"fmt"
	"iter"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	spoolv1 "github.com/spool-run/spool/gen/spool/v1"
	"github.com/spool-run/spool/internal/events"
	"github.com/spool-run/spool/internal/store"
)

// readPage is how many items a read asks DynamoDB for at a time (which
// also stops at 1 MB).
const readPage = 100

// Read implements store.JobStore. It reads the job first, strongly
// consistently: its committed head bounds the read (items past it belong
// to an append not yet committed) and its holes are skipped. Then:
//
//   - from a sequence, it queries the table from seed 000's batch floor,
//     max(1, from - max_batch_size + 1), with the job's own max_batch_size:
//     the item holding `from` cannot start before it. Items that end before
//     `from` (at most a few small ones) are fetched, counted and not
//     yielded.
//   - from a line L, one query of the by-line index finds the first output
//     item whose last line is at least L-1: if it ends at L-1 the read
//     starts right after it (events between it and line L, such as a
//     PROCESS_END, follow line L-1), else at it (it holds line L).
//
// Every read is strongly consistent, so a reader woken by a commit sees it.
// ReadStats counts every event item DynamoDB returned, including the index
// lookup and anything skipped; the job item is not an event and is not
// counted.
func (s *Store) Read(ctx context.Context, req store.ReadRequest) iter.Seq2[*spoolv1.JobEvent, error] {
	return func(yield func(*spoolv1.JobEvent, error) bool) {
		r, err := s.getJob(ctx, req.JobID)
		if errors.Is(err, store.ErrNotFound) {
			return // unknown jobs have empty logs
		}
		if err != nil {
			yield(nil, err)
			return
		}
		from, skipBefore, ok, err := s.seek(ctx, r, req)
		if err != nil {
			yield(nil, err)
			return
		}
		if !ok {
			return
		}
		s.readFrom(ctx, r, req, from, skipBefore, yield)
	}
}

// seek returns the sequence to query from and the sequence below which
// items ending there are skipped; ok is false when there is nothing to
// read.
func (s *Store) seek(ctx context.Context, r *jobRec, req store.ReadRequest) (from, skipBefore int64, ok bool, err error) {
	end := r.head.NextSequence // exclusive
	if req.FromLine > 1 {
		if req.FromLine > r.head.NextLine {
			return 0, 0, false, nil // past the last line and whatever follows it
		}
		from, err = s.seekLine(ctx, r, req)
		return from, 0, err == nil && from > 0 && from < end, err
	}
	if req.FromLine == 1 {
		return 1, 0, end > 1, nil
	}
	want := max(req.FromSequence, 1)
	if want >= end {
		return 0, 0, false, nil
	}
	size := int64(r.spec.GetExecutionConfig().GetBatching().GetMaxBatchSize())
	if size <= 0 {
		size = want // no bound on batches: only a scan from the start is sure
	}
	return events.BatchFloor(want, size), want, true, nil
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
		// One item answers, unless it is in a hole or past the head.
		Limit: aws.Int32(1),
	}
	in.ExpressionAttributeNames, in.ExpressionAttributeValues = e.names, e.values
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
			seq, last := n.get(aSequence), n.get(aLastLine)
			if n.err != nil {
				return 0, n.err
			}
			if seq >= r.head.NextSequence || r.inHole(seq) {
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
// items, skipping holes and items ending before skipBefore.
func (s *Store) readFrom(ctx context.Context, r *jobRec, req store.ReadRequest, from, skipBefore int64, yield func(*spoolv1.JobEvent, error) bool) {
	e := newExpr()
	in := &dynamodb.QueryInput{
		TableName: aws.String(s.cfg.EventsTable),
		KeyConditionExpression: aws.String(and(e.eq(aJobID, str(r.id())),
			e.n(aSequence)+" BETWEEN "+e.v(num(from))+" AND "+e.v(num(r.head.NextSequence-1)))),
		ConsistentRead: aws.Bool(true),
	}
	in.ExpressionAttributeNames, in.ExpressionAttributeValues = e.names, e.values
	yielded := 0
	for {
		limit := readPage
		if req.Limit > 0 {
			limit = min(limit, req.Limit-yielded)
		}
		in.Limit = aws.Int32(int32(limit))
		page, err := s.clients.db.Query(ctx, in)
		if err != nil {
			yield(nil, awsErr(err, "read events of job %s", r.id()))
			return
		}
		if req.Stats != nil {
			req.Stats.ItemsRead += len(page.Items)
		}
		for _, it := range page.Items {
			n := ints{it: it}
			seq, end := n.get(aSequence), n.get(aEndSeq)
			if n.err != nil {
				yield(nil, n.err)
				return
			}
			if end < skipBefore || r.inHole(seq) {
				continue
			}
			ev, err := store.ItemFromPayload(getBin(it, aPayload), seq)
			if err != nil {
				yield(nil, fmt.Errorf("job %s: %w", r.id(), err))
				return
			}
			if !yield(ev, nil) {
				return
			}
			if yielded++; req.Limit > 0 && yielded >= req.Limit {
				return
			}
		}
		if page.LastEvaluatedKey == nil {
			return
		}
		in.ExclusiveStartKey = page.LastEvaluatedKey
	}
}
