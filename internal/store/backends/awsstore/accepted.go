package awsstore

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"iter"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/klauspost/compress/zstd"

	"github.com/spool-run/spool"
	spoolv1 "github.com/spool-run/spool/gen/spool/v1"
	"github.com/spool-run/spool/internal/apierr"
	"github.com/spool-run/spool/internal/events"
	"github.com/spool-run/spool/internal/store"
	"github.com/spool-run/spool/internal/store/storekit"
)

// The accepted events of one Ingest call are kept as one byte stream
// (each event's id, time, message, line and line count), compressed with
// zstd when that helps, and split over events-table items of at most
// acceptedChunkBytes under "accepted#" + job id. Chunk i of the call that
// began at sequence g is at sequence g*acceptedStride + i, so a job's
// calls follow each other in the partition, and, the call's reservation
// being its own, a stalled call writing late never lands on another's
// chunks. Each chunk carries the chunk count of its call.
const (
	acceptedChunkBytes = 350 << 10
	acceptedStride     = 1 << 16
	// maxAcceptedBytes bounds a call's stream, before compression, as
	// written and as read.
	maxAcceptedBytes = 1 << 30
)

// Formats of the stream, its first byte.
const (
	acceptedPlain byte = 0
	acceptedZstd  byte = 1
)

var (
	acceptedEnc, _ = zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedDefault), zstd.WithEncoderConcurrency(1))
	acceptedDec, _ = zstd.NewReader(nil, zstd.WithDecoderConcurrency(0), zstd.WithDecoderMaxMemory(maxAcceptedBytes))
)

// acceptedPart is the events-table partition of a job's accepted events.
func acceptedPart(jobID string) string { return acceptedKeyPrefix + jobID }

// acceptedItems are the chunk items of the events one call accepted,
// laid out at sequence group.
func (s *Store) acceptedItems(jobID string, group int64, acc []store.Accepted) ([]item, error) {
	body := encodeAccepted(acc)
	if len(body) > maxAcceptedBytes {
		return nil, apierr.Errorf(spool.ErrInvalidArgument, "%d events of %d bytes: more than one call may store (%d bytes)", len(acc), len(body), maxAcceptedBytes)
	}
	blob := append([]byte{acceptedPlain}, body...)
	if z := acceptedEnc.EncodeAll(body, []byte{acceptedZstd}); len(z) < len(blob) {
		blob = z
	}
	n := (len(blob) + acceptedChunkBytes - 1) / acceptedChunkBytes
	ttl := num(time.Now().Add(s.cfg.eventsTTL()).Unix())
	out := make([]item, n)
	for i := range n {
		it := eventKey(acceptedPart(jobID), group*acceptedStride+int64(i))
		it[aChunks] = num(n)
		it[aPayload] = bin(blob[i*acceptedChunkBytes : min((i+1)*acceptedChunkBytes, len(blob))])
		it[aTTL] = ttl
		out[i] = it
	}
	return out, nil
}

func encodeAccepted(acc []store.Accepted) []byte {
	var b []byte
	for _, a := range acc {
		b = binary.AppendUvarint(b, uint64(len(a.ID)))
		b = append(b, a.ID...)
		b = binary.AppendVarint(b, a.Time.Unix())
		b = binary.AppendUvarint(b, uint64(a.Time.Nanosecond()))
		b = binary.AppendUvarint(b, uint64(len(a.Message)))
		b = append(b, a.Message...)
		b = binary.AppendUvarint(b, uint64(a.Line))
		b = binary.AppendUvarint(b, uint64(a.Lines))
	}
	return b
}

// decodeAccepted reads a call's stream (its chunks joined) back.
func decodeAccepted(blob []byte, group int64) ([]store.Accepted, error) {
	if len(blob) == 0 {
		return nil, fmt.Errorf("%w: empty", events.ErrCorrupt)
	}
	body := blob[1:]
	switch blob[0] {
	case acceptedPlain:
	case acceptedZstd:
		var err error
		if body, err = acceptedDec.DecodeAll(body, nil); err != nil {
			return nil, fmt.Errorf("%w: %v", events.ErrCorrupt, err)
		}
	default:
		return nil, fmt.Errorf("%w: unknown format %d", events.ErrCorrupt, blob[0])
	}
	d := decoder{b: body}
	var out []store.Accepted
	for len(d.b) > 0 && d.err == nil {
		a := store.Accepted{Group: group}
		a.ID = d.text()
		sec, nsec := d.varint(), d.uvarint()
		a.Time = time.Unix(sec, int64(nsec)).UTC()
		a.Message = d.text()
		a.Line, a.Lines = int64(d.uvarint()), int64(d.uvarint())
		out = append(out, a)
	}
	if d.err != nil {
		return nil, fmt.Errorf("%w: accepted events: %v", events.ErrCorrupt, d.err)
	}
	return out, nil
}

// decoder reads what encodeAccepted wrote, keeping the first error.
type decoder struct {
	b   []byte
	err error
}

var errTruncated = errors.New("truncated")

func (d *decoder) uvarint() uint64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Uvarint(d.b)
	if n <= 0 {
		d.err = errTruncated
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *decoder) varint() int64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Varint(d.b)
	if n <= 0 {
		d.err = errTruncated
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *decoder) text() string {
	n := d.uvarint()
	if d.err != nil {
		return ""
	}
	if n > uint64(len(d.b)) {
		d.err = errTruncated
		return ""
	}
	s := string(d.b[:n])
	d.b = d.b[n:]
	return s
}

// Accepted implements store.IngestStore: one strongly consistent query of
// the job's accepted events, of the calls that committed (below the head
// as read first, outside its holes), in order.
func (s *Store) Accepted(ctx context.Context, jobID string) iter.Seq2[store.Accepted, error] {
	return func(yield func(store.Accepted, error) bool) {
		r, err := s.getJob(ctx, jobID)
		if errors.Is(err, spool.ErrNotFound) {
			return
		}
		if err != nil {
			yield(store.Accepted{}, err)
			return
		}
		if !r.external() || r.head.NextSequence <= 1 {
			return
		}
		e := newExpr()
		in := &dynamodb.QueryInput{
			TableName: aws.String(s.cfg.EventsTable),
			KeyConditionExpression: aws.String(and(e.eq(aJobID, str(acceptedPart(jobID))),
				e.n(aSequence)+" BETWEEN "+e.v(num(int64(acceptedStride)))+" AND "+e.v(num(r.head.NextSequence*acceptedStride-1)))),
			ConsistentRead: aws.Bool(true),
		}
		in.ExpressionAttributeNames, in.ExpressionAttributeValues = e.names, e.values
		// cur gathers the chunks of one call; group 0 is none yet.
		var cur struct {
			group, chunks, seen int64
			blob                []byte
		}
		// finish yields the events of the call gathered so far.
		finish := func() bool {
			if cur.group == 0 {
				return true
			}
			acc, err := decodeAccepted(cur.blob, cur.group)
			if err == nil && cur.seen != cur.chunks {
				err = fmt.Errorf("%w: %d of %d chunks", events.ErrCorrupt, cur.seen, cur.chunks)
			}
			if err != nil {
				yield(store.Accepted{}, fmt.Errorf("job %s: the events accepted at sequence %d: %w", jobID, cur.group, err))
				return false
			}
			for _, a := range acc {
				if !yield(a, nil) {
					return false
				}
			}
			return true
		}
		for p := dynamodb.NewQueryPaginator(s.clients.db, in); p.HasMorePages(); {
			page, err := p.NextPage(ctx)
			if err != nil {
				yield(store.Accepted{}, awsErr(err, "read the accepted events of job %s", jobID))
				return
			}
			for _, it := range page.Items {
				n := ints{it: it}
				seq, chunks := n.get(aSequence), n.get(aChunks)
				if n.err != nil {
					yield(store.Accepted{}, n.err)
					return
				}
				// A call whose range is a hole never committed: whatever it
				// wrote is skipped, as its log items are.
				g, i := seq/acceptedStride, seq%acceptedStride
				if r.inHole(g) {
					continue
				}
				if g != cur.group {
					if !finish() {
						return
					}
					cur.group, cur.chunks, cur.seen, cur.blob = g, chunks, 0, nil
				}
				if i != cur.seen {
					yield(store.Accepted{}, fmt.Errorf("job %s: the events accepted at sequence %d: %w: chunk %d is missing", jobID, g, events.ErrCorrupt, cur.seen))
					return
				}
				cur.blob = append(cur.blob, getBin(it, aPayload)...)
				cur.seen++
			}
		}
		finish()
	}
}

// ReplaceLog implements store.IngestStore: the items of evs are written
// over what is stored at their sequences, then the items below the head
// that evs do not hold are deleted, and rev is bumped so followers read
// again. The head stays; evs must lie below it (a range past it belongs to
// the next call).
func (s *Store) ReplaceLog(ctx context.Context, jobID string, evs []*spoolv1.JobEvent) error {
	items, err := storekit.StoredItems(evs, s.Limits())
	if err != nil {
		return err
	}
	r, err := s.getJob(ctx, jobID)
	if err != nil {
		return err
	}
	if err := storekit.CheckReplace(r.spec); err != nil {
		return err
	}
	keep := make(map[int64]bool, len(items))
	for _, it := range items {
		if it.EndSequence >= r.head.NextSequence {
			return apierr.Errorf(spool.ErrInvalidArgument, "job %s: an item at sequences %d-%d lies past the log's head (%d)", jobID, it.Sequence, it.EndSequence, r.head.NextSequence)
		}
		keep[it.Sequence] = true
	}
	if err := s.putAll(ctx, s.cfg.EventsTable, s.eventItems(jobID, 0, items)); err != nil {
		return err
	}
	seqs, err := s.storedSeqs(ctx, jobID, 1, r.head.NextSequence)
	if err != nil {
		return err
	}
	var stale []item
	for _, seq := range seqs {
		if !keep[seq] {
			stale = append(stale, eventKey(jobID, seq))
		}
	}
	if err := s.deleteAll(ctx, s.cfg.EventsTable, stale); err != nil {
		return err
	}
	e := newExpr()
	_, _, err = s.updateJob(ctx, jobID, newUpdate(e).BumpRev(), isJob(e))
	return err
}
