package awsstore

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/spool-run/spool"
	"github.com/spool-run/spool/internal/apierr"
	"github.com/spool-run/spool/internal/store"
	"github.com/spool-run/spool/internal/store/storekit"
)

// The layout of scatters is in schema.go and doc.go.
const (
	// scatterChunkBytes is the most of a batch one item holds: DynamoDB
	// refuses items over 400 KB, and the key and chunk count need a little
	// room beside the bytes.
	scatterChunkBytes = 350 << 10
	// scatterWriters is how many BatchWriteItem calls CreateScatter has in
	// flight at once: a scatter of thousands of batches is hundreds of
	// calls, which one after another would take seconds of round trips,
	// while many at once would only get throttled.
	scatterWriters = 4
	// maxScatterID bounds a scatter id: it goes into keys (partition keys
	// hold at most 2048 bytes, sort keys 1024) with a prefix and a batch
	// index beside it. Scatter ids are UUIDs; anything longer is no id.
	maxScatterID = 512
)

func validScatterID(id string) bool { return id != "" && len(id) <= maxScatterID }

// scatterKey is the key of a scatter's record in the jobs table.
func scatterKey(id string) item { return item{aJobID: str(scatterKeyPrefix + id)} }

// batchPart is the events-table partition of a batch's chunks.
func batchPart(id string, index int32) string {
	return scatterKeyPrefix + id + "#b#" + strconv.FormatInt(int64(index), 10)
}

// scatterPart is the by-time partition a record is listed in. Keeping the
// active scatters in a partition of their own makes the listing the
// drivers poll read only them, however many finished ones pile up.
func scatterPart(active bool) string {
	if active {
		return scattersActivePart
	}
	return scattersInactivePart
}

// scatterItem is the record's item at the given version.
func scatterItem(rec *store.ScatterRecord, version int64) (item, error) {
	blob, err := storekit.EncodeScatter(rec)
	if err != nil {
		return nil, err
	}
	id := rec.Scatter.GetScatterId()
	it := scatterKey(id)
	it[aKind] = str(kindScatter)
	it[aVersion] = num(version)
	it[aActive] = boolean(rec.Active)
	it[aRecord] = bin(blob)
	it[aListPart] = str(scatterPart(rec.Active))
	it[aCreatedKey] = str(id)
	return it, nil
}

func isScatterItem(it item) bool { return getStr(it, aKind) == kindScatter }

// decodeScatter reads a record's item.
func decodeScatter(it item) (*store.ScatterRecord, error) {
	version, err := getInt(it, aVersion)
	if err != nil {
		return nil, fmt.Errorf("stored scatter %s: %w", getStr(it, aJobID), err)
	}
	return storekit.DecodeScatter(getBin(it, aRecord), version, getBool(it, aActive))
}

// CreateScatter implements store.ScatterStore. DynamoDB here has no
// transactions, so the record is what makes a scatter exist: the batches
// are written first and the record last, only if absent. A create that
// dies before its record leaves chunks nobody reads (no record names them),
// which a retry with the same id writes over; ScatterBatch reads only as
// many chunks as the last complete write made, so a retry's shorter batch
// is not followed by an earlier try's leftovers.
//
// An id in use is refused before any chunk is written, as writing them
// would replace that scatter's batches. Two creates of one id at the same
// moment could still both pass that check; scatter ids are new UUIDs, so
// only a caller retrying its own create, with the same batches, could.
func (s *Store) CreateScatter(ctx context.Context, rec *store.ScatterRecord, batches [][]byte) error {
	id := rec.Scatter.GetScatterId()
	if !validScatterID(id) {
		return apierr.Errorf(spool.ErrInvalidArgument, "scatter id of %d bytes: want 1 to %d", len(id), maxScatterID)
	}
	it, err := scatterItem(rec, 1)
	if err != nil {
		return err
	}
	old, err := s.getItem(ctx, scatterKey(id))
	if err != nil {
		return err
	}
	if old != nil {
		return store.ScatterExists(id)
	}
	if err := s.putChunks(ctx, chunkRequests(id, batches)); err != nil {
		return fmt.Errorf("create scatter %s: %w", id, err)
	}
	if err := runHook(ctx, s.hooks.afterScatterBatches); err != nil {
		return err
	}
	written, err := s.putIfAbsent(ctx, it)
	if err != nil {
		return awsErr(err, "create scatter %s", id)
	}
	if !written {
		return store.ScatterExists(id)
	}
	rec.Version = 1
	return nil
}

// chunkRequests are the writes of every batch's chunks. Each chunk says
// how many its batch has, so a reader knows where the batch ends.
func chunkRequests(id string, batches [][]byte) []types.WriteRequest {
	var reqs []types.WriteRequest
	for i, b := range batches {
		n := max(1, (len(b)+scatterChunkBytes-1)/scatterChunkBytes)
		for c := range n {
			it := item{aJobID: str(batchPart(id, int32(i))), aSequence: num(c), aChunks: num(n)}
			// An empty batch is one chunk without bytes: not every endpoint
			// takes an empty binary value.
			if part := b[c*scatterChunkBytes : min((c+1)*scatterChunkBytes, len(b))]; len(part) > 0 {
				it[aPayload] = bin(part)
			}
			reqs = append(reqs, types.WriteRequest{PutRequest: &types.PutRequest{Item: it}})
		}
	}
	return reqs
}

// putChunks writes chunks to the events table, batchWriteMax a call and
// scatterWriters calls at once. The first failure stops the rest.
func (s *Store) putChunks(parent context.Context, reqs []types.WriteRequest) error {
	ctx, cancel := context.WithCancel(parent)
	defer cancel()
	var (
		mu    sync.Mutex
		first error
		wg    sync.WaitGroup
	)
	groups := make(chan []types.WriteRequest)
	for range scatterWriters {
		wg.Go(func() {
			for g := range groups {
				if err := s.batchWrite(ctx, s.cfg.EventsTable, g); err != nil {
					mu.Lock()
					if first == nil {
						first = err
						cancel()
					}
					mu.Unlock()
				}
			}
		})
	}
feed:
	for start := 0; start < len(reqs); start += batchWriteMax {
		select {
		case groups <- reqs[start:min(start+batchWriteMax, len(reqs))]:
		case <-ctx.Done():
			break feed
		}
	}
	close(groups)
	wg.Wait()
	if first == nil {
		first = parent.Err()
	}
	return first
}

// GetScatter implements store.ScatterStore.
func (s *Store) GetScatter(ctx context.Context, id string) (*store.ScatterRecord, error) {
	if !validScatterID(id) {
		return nil, store.ScatterNotFound(id)
	}
	it, err := s.getItem(ctx, scatterKey(id))
	if err != nil {
		return nil, err
	}
	if it == nil || !isScatterItem(it) {
		return nil, store.ScatterNotFound(id)
	}
	return decodeScatter(it)
}

// UpdateScatter implements store.ScatterStore: the record is replaced on
// condition that its version is the one the caller read, which also fails
// when there is no record at all; one more read tells which it was.
func (s *Store) UpdateScatter(ctx context.Context, rec *store.ScatterRecord) error {
	id := rec.Scatter.GetScatterId()
	if !validScatterID(id) {
		return store.ScatterNotFound(id)
	}
	it, err := scatterItem(rec, rec.Version+1)
	if err != nil {
		return err
	}
	e := newExpr()
	_, err = s.clients.db.PutItem(ctx, &dynamodb.PutItemInput{
		TableName:                 aws.String(s.cfg.JobsTable),
		Item:                      it,
		ConditionExpression:       aws.String(e.eq(aVersion, num(rec.Version))),
		ExpressionAttributeNames:  e.names,
		ExpressionAttributeValues: e.values,
	})
	if conditionFailed(err) {
		cur, err := s.getItem(ctx, scatterKey(id))
		switch {
		case err != nil:
			return err
		case cur == nil || !isScatterItem(cur):
			return store.ScatterNotFound(id)
		}
		return store.ErrScatterMoved
	}
	if err != nil {
		return awsErr(err, "update scatter %s", id)
	}
	rec.Version++
	return nil
}

// ListScatters implements store.ScatterStore. The active scatters are one
// by-time partition and the others another, both sorted by scatter id:
// an active listing queries the first, a full one both, merged. Either way
// it asks each partition for one entry more than a page, below the cursor,
// so it reads no more than a page or two of index entries, knows whether
// another page follows, and never filters. The page's records are then
// read from the table.
func (s *Store) ListScatters(ctx context.Context, f store.ScatterFilter) ([]*store.ScatterRecord, string, error) {
	if len(f.Cursor) > maxScatterID {
		return nil, "", apierr.Errorf(spool.ErrInvalidArgument, "cursor does not come from a scatter listing")
	}
	limit := store.ListLimit(f.Limit)
	parts := []string{scattersActivePart}
	if !f.Active {
		parts = append(parts, scattersInactivePart)
	}
	var ids []string
	for _, part := range parts {
		got, err := s.scatterIDs(ctx, part, f.Cursor, limit+1)
		if err != nil {
			return nil, "", err
		}
		ids = append(ids, got...)
	}
	// The index follows the table a little later, and a scatter whose
	// active changed moves between partitions: for a moment it may be in
	// both. It is listed once.
	slices.Sort(ids)
	ids = slices.Compact(ids)
	slices.Reverse(ids)
	next := ""
	if len(ids) > limit {
		ids = ids[:limit]
		next = ids[limit-1]
	}
	keys := make([]item, len(ids))
	for i, id := range ids {
		keys[i] = scatterKey(id)
	}
	items, err := s.batchGet(ctx, s.cfg.JobsTable, keys, consistentAll())
	if err != nil {
		return nil, "", err
	}
	byID := make(map[string]item, len(items))
	for _, it := range items {
		byID[strings.TrimPrefix(getStr(it, aJobID), scatterKeyPrefix)] = it
	}
	out := make([]*store.ScatterRecord, 0, len(ids))
	for _, id := range ids {
		it, ok := byID[id]
		if !ok || !isScatterItem(it) {
			continue
		}
		rec, err := decodeScatter(it)
		if err != nil {
			return nil, "", err
		}
		// For the same lag, an active listing may find a scatter that
		// has just become inactive: the table has the last word.
		if f.Active && !rec.Active {
			continue
		}
		out = append(out, rec)
	}
	return out, next, nil
}

// scatterIDs returns up to n scatter ids of one by-time partition, newest
// first, below the cursor when there is one.
func (s *Store) scatterIDs(ctx context.Context, part, cursor string, n int) ([]string, error) {
	e := newExpr()
	cond := e.eq(aListPart, str(part))
	if cursor != "" {
		cond = and(cond, e.n(aCreatedKey)+" < "+e.v(str(cursor)))
	}
	in := &dynamodb.QueryInput{
		TableName:                 aws.String(s.cfg.JobsTable),
		IndexName:                 aws.String(indexByTime),
		KeyConditionExpression:    aws.String(cond),
		ProjectionExpression:      aws.String(e.n(aCreatedKey)),
		ScanIndexForward:          aws.Bool(false),
		Limit:                     aws.Int32(int32(n)),
		ExpressionAttributeNames:  e.names,
		ExpressionAttributeValues: e.values,
	}
	var ids []string
	for p := dynamodb.NewQueryPaginator(s.clients.db, in); p.HasMorePages() && len(ids) < n; {
		page, err := p.NextPage(ctx)
		if err != nil {
			return nil, awsErr(err, "list scatters")
		}
		for _, it := range page.Items {
			ids = append(ids, getStr(it, aCreatedKey))
		}
	}
	return ids[:min(n, len(ids))], nil
}

// ScatterBatch implements store.ScatterStore: one strongly consistent
// query of the batch's partition, chunks in order. It reads only as many
// chunks as the first one says the batch has: any further ones are left
// from an earlier try of the create that stopped before its record.
func (s *Store) ScatterBatch(ctx context.Context, id string, index int32) ([]byte, error) {
	if !validScatterID(id) || index < 0 {
		return nil, store.ScatterNotFound(id)
	}
	e := newExpr()
	in := &dynamodb.QueryInput{
		TableName:                 aws.String(s.cfg.EventsTable),
		KeyConditionExpression:    aws.String(e.eq(aJobID, str(batchPart(id, index)))),
		ConsistentRead:            aws.Bool(true),
		ExpressionAttributeNames:  e.names,
		ExpressionAttributeValues: e.values,
	}
	var (
		out  []byte
		n    int64 = -1 // chunks of the batch, once the first is read
		have int64      // chunks read
	)
	corrupt := func(why string) error {
		return fmt.Errorf("batch %d of scatter %s as stored is corrupt: %s", index, id, why)
	}
	for p := dynamodb.NewQueryPaginator(s.clients.db, in); p.HasMorePages() && have != n; {
		page, err := p.NextPage(ctx)
		if err != nil {
			return nil, awsErr(err, "read batch %d of scatter %s", index, id)
		}
		for _, it := range page.Items {
			r := ints{it: it}
			seq, chunks := r.get(aSequence), r.get(aChunks)
			if r.err != nil {
				return nil, corrupt(r.err.Error())
			}
			if n < 0 {
				if chunks < 1 {
					return nil, corrupt(fmt.Sprintf("its first chunk says it has %d", chunks))
				}
				n = chunks
			}
			if have == n {
				break
			}
			if seq != have || chunks != n {
				return nil, corrupt(fmt.Sprintf("chunk %d of %d where chunk %d of %d belongs", seq, chunks, have, n))
			}
			out = append(out, getBin(it, aPayload)...)
			have++
		}
	}
	switch {
	case n < 0:
		return nil, store.ScatterNotFound(id)
	case have != n:
		return nil, corrupt(fmt.Sprintf("%d of its %d chunks are missing", n-have, n))
	case out == nil:
		out = []byte{}
	}
	return out, nil
}
