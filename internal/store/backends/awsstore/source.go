package awsstore

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"google.golang.org/protobuf/proto"

	"github.com/spool-run/spool"
	spoolv1 "github.com/spool-run/spool/gen/spool/v1"
	"github.com/spool-run/spool/internal/store"
	"github.com/spool-run/spool/internal/store/storekit"
)

// sourceJobsKept bounds the job ids a source's record lists for
// ListFilter.Source: a source that has had more jobs lists its newest
// sourceJobsKept (about 40 KB of ids); older jobs stay, in the other
// listings, with their logs and markers.
const sourceJobsKept = 1000

// sourceKey identifies a source in keys: the hex SHA-256 of its name,
// since a source may be a kilobyte of any text.
type sourceKey string

func sourceKeyOf(source string) sourceKey {
	sum := sha256.Sum256([]byte(source))
	return sourceKey(hex.EncodeToString(sum[:]))
}

// recordKey is the key of a source's record in the jobs table.
func (k sourceKey) recordKey() item { return jobKey(sourceKeyPrefix + string(k)) }

// sourceRec is a source's record as read.
type sourceRec struct {
	version int64        // jobs the source has had
	newest  string       // the id of the newest
	job     *spoolv1.Job // the newest as created
	jobs    []string     // ids, newest first
}

// getSource reads a source's record: nil when the source has never had a
// job.
func (s *Store) getSource(ctx context.Context, k sourceKey) (*sourceRec, error) {
	it, err := s.getItem(ctx, k.recordKey())
	if err != nil || it == nil || getStr(it, aKind) != kindSource {
		return nil, err
	}
	rec := &sourceRec{newest: getStr(it, aNewest), job: &spoolv1.Job{}}
	if rec.version, err = getInt(it, aVersion); err != nil {
		return nil, fmt.Errorf("source record %s: %w", k, err)
	}
	if err := proto.Unmarshal(getBin(it, aJob), rec.job); err != nil {
		return nil, fmt.Errorf("source record %s: its job is corrupt: %w", k, err)
	}
	if l, ok := it[aJobs].(*types.AttributeValueMemberL); ok {
		for _, v := range l.Value {
			if id, ok := v.(*types.AttributeValueMemberS); ok {
				rec.jobs = append(rec.jobs, id.Value)
			}
		}
	}
	return rec, nil
}

// sourceJob returns the newest job of a source, and its record when it was
// read (the record is needed to open the next job): nil when the source
// has none. A job this store saw open and finds still running is the open
// one (a source opens a job only once its newest has ended), so the record
// is read only when the source's job changes.
func (s *Store) sourceJob(ctx context.Context, source string, k sourceKey) (*sourceRec, *jobRec, error) {
	if id, ok := s.sources.get(k); ok {
		r, err := s.getJob(ctx, id)
		if err != nil && !errors.Is(err, spool.ErrNotFound) {
			return nil, nil, err
		}
		if err == nil && r.state == spoolv1.JobState_JOB_STATE_RUNNING {
			return nil, r, nil
		}
		s.sources.forget(k)
	}
	rec, err := s.getSource(ctx, k)
	if err != nil || rec == nil || rec.newest == "" { // "": DeleteJob took the newest away
		return rec, nil, err
	}
	r, err := s.getJob(ctx, rec.newest)
	if errors.Is(err, spool.ErrNotFound) {
		if s.expiredJob(rec.job) {
			// DynamoDB's TTL deleted it, long ended: the source has no
			// job, and the next one opens as after any ended job.
			return rec, nil, nil
		}
		// DeleteJob takes a job out of the record before deleting it: if
		// the record no longer names it, it was deleted after our read.
		again, rerr := s.getSource(ctx, k)
		if rerr != nil {
			return nil, nil, rerr
		}
		if again == nil || again.newest != rec.newest {
			return s.sourceJob(ctx, source, k)
		}
		// The call that opened it stopped between the record and the job:
		// the record holds the whole job, so the item is written from it.
		s.log.Warn("finishing the opening of an external job", "job", rec.newest)
		r, err = s.putSourceJob(ctx, rec.job, rec.version)
	}
	if err != nil {
		return nil, nil, err
	}
	if got := r.spec.GetParams().GetExternal().GetSource(); got != source {
		return nil, nil, fmt.Errorf("source record %s names job %s, which is not the source's (its source is %q)", k, r.id(), got)
	}
	if r.state == spoolv1.JobState_JOB_STATE_RUNNING {
		s.sources.put(k, r.id())
	}
	return rec, r, nil
}

// expiredJob reports whether a job as created may have been deleted by
// DynamoDB's TTL by now: it expires JobTTL after it ends, so no sooner
// than JobTTL after its creation. (A job item written from its source's
// record follows the record within moments, so a missing item that old
// was never still to be written.)
func (s *Store) expiredJob(created *spoolv1.Job) bool {
	return s.cfg.JobTTL > 0 && time.Since(created.GetCreatedAt().AsTime()) > s.cfg.JobTTL
}

// openSourceJob opens the next job of a source from nj: a compare-and-set
// of the record (so that of servers opening one at once, one wins), then
// the job item. nil when another call changed the record first.
func (s *Store) openSourceJob(ctx context.Context, source string, k sourceKey, rec *sourceRec, nj store.NewJob) (*jobRec, error) {
	s.register(ctx, nj.Queue)
	job := storekit.NewJobRecord(nj, storekit.Now())
	var version int64
	var ids []string
	if rec != nil {
		version, ids = rec.version, rec.jobs
	}
	ids = append([]string{job.GetJobId()}, ids[:min(len(ids), sourceJobsKept-1)]...)
	b, err := marshal(job)
	if err != nil {
		return nil, err
	}
	list := make([]types.AttributeValue, len(ids))
	for i, id := range ids {
		list[i] = str(id)
	}
	it := k.recordKey()
	it[aKind] = str(kindSource)
	it[aSource] = str(source)
	it[aVersion] = num(version + 1)
	it[aNewest] = str(job.GetJobId())
	it[aJob] = bin(b)
	it[aJobs] = &types.AttributeValueMemberL{Value: list}
	e := newExpr()
	var cond string
	if rec == nil {
		cond = "attribute_not_exists(" + e.n(aJobID) + ")"
	} else {
		cond = e.eq(aVersion, num(version))
	}
	_, err = s.clients.db.PutItem(ctx, &dynamodb.PutItemInput{
		TableName:                 aws.String(s.cfg.JobsTable),
		Item:                      it,
		ConditionExpression:       aws.String(cond),
		ExpressionAttributeNames:  e.names,
		ExpressionAttributeValues: e.valuesOrNil(),
	})
	if conditionFailed(err) {
		return nil, nil
	}
	if err != nil {
		return nil, awsErr(err, "open a job for source record %s", k)
	}
	r, err := s.putSourceJob(ctx, job, version+1)
	if err == nil {
		s.sources.put(k, r.id())
	}
	return r, err
}

// putSourceJob writes the item of an external job (only if absent) and
// returns the job as stored: running attempt 1 under store.ExternalLease,
// with no lease expiry, so the leases index never holds it, and no SQS
// message.
func (s *Store) putSourceJob(ctx context.Context, job *spoolv1.Job, ord int64) (*jobRec, error) {
	it, err := newJobItem(job, nil)
	if err != nil {
		return nil, err
	}
	it[aLeaseID] = str(store.ExternalLease)
	it[aSrcOrd] = num(ord)
	written, err := s.putIfAbsent(ctx, it)
	if err != nil {
		return nil, awsErr(err, "write job %s", job.GetJobId())
	}
	if !written {
		return s.getJob(ctx, job.GetJobId())
	}
	return decodeJob(it)
}

// listSource is List of one source's jobs: the ids its record lists,
// newest first, from after the cursor's job, read with BatchGetItem and
// filtered (state, queue) here. Without a state filter a page reads one
// job more than it returns; with one, reads grow from a page to listScan
// jobs, and a call stops after listScan*listRounds jobs examined, with a
// cursor at the last.
func (s *Store) listSource(ctx context.Context, f store.ListFilter, after *storekit.Cursor, limit int) ([]*spoolv1.Job, string, error) {
	rec, err := s.getSource(ctx, sourceKeyOf(f.Source))
	if err != nil || rec == nil {
		return nil, "", err
	}
	ids := rec.jobs
	if after != nil {
		i := slices.Index(ids, after.JobID)
		if i < 0 {
			// Not one of the source's listed jobs: a cursor of another
			// listing, or a job so old the record no longer lists it (nor
			// any after it).
			return nil, "", nil
		}
		ids = ids[i+1:]
	}
	filtered := len(f.States) > 0 || f.Queue != ""
	budget := s.listScan * s.listRounds
	var (
		out      []*spoolv1.Job
		examined int
		last     storekit.Cursor
		want     = limit + 1
	)
	for len(ids) > 0 {
		take := ids[:min(want, len(ids))]
		ids = ids[len(take):]
		byID, err := s.getJobs(ctx, take)
		if err != nil {
			return nil, "", err
		}
		for _, id := range take {
			examined++
			last = storekit.Cursor{JobID: id}
			r, ok := byID[id]
			if !ok {
				continue
			}
			last.CreatedAt = r.spec.GetCreatedAt().AsTime()
			if (len(f.States) > 0 && !slices.Contains(f.States, r.state)) || (f.Queue != "" && r.queue() != f.Queue) {
				continue
			}
			if out = append(out, r.view()); len(out) > limit {
				page := out[:limit]
				end := page[limit-1]
				return page, storekit.Cursor{CreatedAt: end.GetCreatedAt().AsTime(), JobID: end.GetJobId()}.Encode(), nil
			}
		}
		if filtered && examined >= budget && len(ids) > 0 {
			return out, last.Encode(), nil
		}
		want = min(want*2, max(s.listScan, limit+1))
	}
	return out, "", nil
}

// openJobs remembers, per source, the job this store last saw open, so
// that an Ingest call reads the job alone and not the source's record
// first. It is a hint, checked against the job each time, and bounded.
type openJobs struct {
	mu sync.Mutex
	m  map[sourceKey]string
}

// openJobsMax bounds the sources remembered; past it, all are forgotten
// (each costs one read of its record to remember again).
const openJobsMax = 10_000

func (o *openJobs) get(k sourceKey) (string, bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	id, ok := o.m[k]
	return id, ok
}

func (o *openJobs) put(k sourceKey, id string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.m == nil || len(o.m) >= openJobsMax {
		o.m = map[sourceKey]string{}
	}
	o.m[k] = id
}

func (o *openJobs) forget(k sourceKey) {
	o.mu.Lock()
	defer o.mu.Unlock()
	delete(o.m, k)
}
