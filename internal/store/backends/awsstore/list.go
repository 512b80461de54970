package awsstore

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/spool-run/spool"
	spoolv1 "github.com/spool-run/spool/gen/spool/v1"
	"github.com/spool-run/spool/internal/apierr"
	"github.com/spool-run/spool/internal/store"
	"github.com/spool-run/spool/internal/store/storekit"
)

// The work of a listing with a state filter, per List call: at most
// listRounds queries of listScan index entries each. The filter applies
// after DynamoDB's limit, so a query's entries are examined, matching or
// not; a filter that few jobs match gets a short, even empty, page and a
// cursor to go on from, rather than one call reading the whole index.
const (
	listScan   = 250
	listRounds = 4
)

// List implements store.JobStore. A listing of one source's jobs reads the
// ids the source's record keeps (see listSource). Any other listing
// queries a listing index newest first (by-queue for one queue, by-time
// for all), which holds each job's state, so the state filter runs in
// DynamoDB; then it reads the page's jobs from the table. The cursor is an
// index position to continue from (its ExclusiveStartKey): the page's last
// job, or the last entry examined when the call's work ran out first.
func (s *Store) List(ctx context.Context, f store.ListFilter) ([]*spoolv1.Job, string, error) {
	after, err := storekit.ParseCursor(f.Cursor)
	if err != nil {
		return nil, "", err
	}
	limit := store.ListLimit(f.Limit)
	if f.Source != "" {
		return s.listSource(ctx, f, after, limit)
	}
	entries, next, err := s.listIndex(ctx, f, after, limit)
	if err != nil {
		return nil, "", err
	}
	ids := make([]string, len(entries))
	for i, en := range entries {
		ids[i] = en.id
	}
	byID, err := s.getJobs(ctx, ids)
	if err != nil {
		return nil, "", err
	}
	jobs := make([]*spoolv1.Job, 0, len(entries))
	for _, en := range entries {
		r, ok := byID[en.id]
		// The index lags the table a little: a job that has just left the
		// states asked for is left out.
		if ok && (len(f.States) == 0 || slices.Contains(f.States, r.state)) {
			jobs = append(jobs, r.view())
		}
	}
	return jobs, next, nil
}

// getJobs reads the jobs of ids (strongly consistent, BatchGetItem), by
// id; a job not found is not in the map.
func (s *Store) getJobs(ctx context.Context, ids []string) (map[string]*jobRec, error) {
	keys := make([]item, len(ids))
	for i, id := range ids {
		keys[i] = jobKey(id)
	}
	items, err := s.batchGet(ctx, s.cfg.JobsTable, keys, consistentAll())
	if err != nil {
		return nil, err
	}
	byID := make(map[string]*jobRec, len(items))
	for _, it := range items {
		r, err := decodeJob(it)
		if err != nil {
			return nil, err
		}
		byID[r.id()] = r
	}
	return byID, nil
}

// listEntry is a job found in a listing index.
type listEntry struct {
	id      string
	created time.Time
}

// listIndex returns up to limit index entries matching f after the cursor,
// and the cursor of what follows ("" when nothing does).
func (s *Store) listIndex(ctx context.Context, f store.ListFilter, after *storekit.Cursor, limit int) ([]listEntry, string, error) {
	index, partAttr, part := indexByTime, aListPart, listPart
	if f.Queue != "" {
		index, partAttr, part = indexByQueue, aQueue, f.Queue
	}
	e := newExpr()
	in := &dynamodb.QueryInput{
		TableName:              aws.String(s.cfg.JobsTable),
		IndexName:              aws.String(index),
		KeyConditionExpression: aws.String(e.eq(partAttr, str(part))),
		ProjectionExpression:   aws.String(e.n(aJobID) + ", " + e.n(aCreatedKey)),
		ScanIndexForward:       aws.Bool(false),
		Limit:                  aws.Int32(int32(limit + 1)),
	}
	rounds := 0 // no bound: every entry examined is returned but the last
	if len(f.States) > 0 {
		vals := make([]string, len(f.States))
		for i, st := range f.States {
			vals[i] = e.v(num(int32(st)))
		}
		in.FilterExpression = aws.String(e.n(aState) + " IN (" + strings.Join(vals, ", ") + ")")
		in.Limit = aws.Int32(int32(max(limit+1, s.listScan)))
		rounds = s.listRounds
	}
	in.ExpressionAttributeNames, in.ExpressionAttributeValues = e.names, e.values
	if after != nil {
		in.ExclusiveStartKey = item{
			aJobID:      str(after.JobID),
			partAttr:    str(part),
			aCreatedKey: str(createdKey(after.CreatedAt, after.JobID)),
		}
	}
	var out []listEntry
	for round := 1; ; round++ {
		page, err := s.clients.db.Query(ctx, in)
		if err != nil {
			if after != nil && errorCode(err) == "ValidationException" {
				return nil, "", apierr.Errorf(spool.ErrInvalidArgument, "cursor does not fit this listing: pass next_cursor with the same filter it came with")
			}
			return nil, "", awsErr(err, "list jobs")
		}
		for _, it := range page.Items {
			en, err := parseCreatedKey(getStr(it, aCreatedKey))
			if err != nil {
				return nil, "", err
			}
			if out = append(out, en); len(out) > limit {
				last := out[limit-1]
				return out[:limit], storekit.Cursor{CreatedAt: last.created, JobID: last.id}.Encode(), nil
			}
		}
		if page.LastEvaluatedKey == nil {
			return out, "", nil
		}
		if round == rounds {
			// Go on from the last entry examined, matching or not.
			en, err := parseCreatedKey(getStr(page.LastEvaluatedKey, aCreatedKey))
			if err != nil {
				return nil, "", err
			}
			return out, storekit.Cursor{CreatedAt: en.created, JobID: en.id}.Encode(), nil
		}
		in.ExclusiveStartKey = page.LastEvaluatedKey
	}
}

// parseCreatedKey reads a createdKey.
func parseCreatedKey(k string) (listEntry, error) {
	micros, id, ok := strings.Cut(k, "#")
	us, err := strconv.ParseInt(micros, 10, 64)
	if !ok || err != nil || id == "" {
		return listEntry{}, fmt.Errorf("listing index holds a malformed %s %q", aCreatedKey, k)
	}
	return listEntry{id: id, created: time.UnixMicro(us).UTC()}, nil
}

// consistentAll is a KeysAndAttributes for strongly consistent batch reads
// of whole items.
func consistentAll() types.KeysAndAttributes {
	return types.KeysAndAttributes{ConsistentRead: aws.Bool(true)}
}
