package awsstore

import (
	"context"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	spoolv1 "github.com/spool-run/spool/gen/spool/v1"
	"github.com/spool-run/spool/internal/convert"
	"github.com/spool-run/spool/internal/store"
	"github.com/spool-run/spool/internal/store/storekit"
)

// jobRec is a job item as read from the jobs table.
type jobRec struct {
	spec         *spoolv1.Job // the fixed part
	state        spoolv1.JobState
	attempt      int32
	updatedAt    time.Time
	startedAt    time.Time // zero until the first lease
	cancel       bool
	result       *spoolv1.JobResult
	book         *spoolv1.Job // storekit.Bookkeeping
	leaseID      string
	leaseExpires time.Time
	msgID        string
	head         store.Head // committed
	res          *reservation
	holes        []hole
	spans        []span // attempts whose items are keyed apart: see keyBase
	rev          int64
	srcOrd       int64 // an external job's: see aSrcOrd
	watchedUntil int64 // Unix microseconds: see shares
}

// reservation is a range of the log claimed by one Append (or Ingest
// call) that has not been committed yet: [head.NextSequence, seq).
type reservation struct {
	seq, line int64
	lease     string    // the claim's owner: a lease id, or an Ingest call's token
	at        time.Time // when it was made or last renewed, by its owner's clock
}

// reservationAttrs are the attributes of a pending reservation.
var reservationAttrs = []string{aResSeq, aResLine, aResLease, aResAt}

// hole is an abandoned reservation [from, to): its items, if any were
// written, belong to no acknowledged publish and readers skip them.
type hole struct{ from, to int64 }

// span records that an attempt began at sequence from and keys its event
// items apart from every other attempt's (see keyBase). Attempt 1, and any
// attempt leased before spans existed, has none: its items are keyed by
// sequence alone.
type span struct {
	attempt int32
	from    int64
}

// seqBits is how many low bits of an event item's key are its sequence;
// the bits above are the attempt of a span (0: keyed by sequence alone).
// Sequences stay below 2^40, a trillion events a job.
const (
	seqBits     = 40
	maxSequence = 1<<seqBits - 1
)

// keyBase is what is added to a sequence to make the key of an item of
// attempt in this job's log. An attempt leased with a span (every attempt
// after the first) writes its items under keys no other attempt uses, so
// a stalled worker of an earlier attempt, whose writes nothing can fence
// (BatchWriteItem takes no conditions), can never overwrite the newer
// attempt's items: what it writes lies past where its attempt's part of
// the log ends, which readers never read.
func (r *jobRec) keyBase(attempt int32) int64 {
	for _, sp := range r.spans {
		if sp.attempt == attempt {
			return int64(attempt) << seqBits
		}
	}
	return 0
}

// part is a stretch [from, to) of the committed log whose items are keyed
// at sequence + base: the part of one attempt, or of the attempts keyed by
// sequence alone.
type part struct{ from, to, base int64 }

// parts divides the committed log, in order, into the parts of its
// attempts: each attempt with a span owns the log from where it began to
// where the next began (the last, to the head); the attempts keyed by
// sequence alone own what comes before the first span.
func (r *jobRec) parts() []part {
	end := r.head.NextSequence
	var out []part
	add := func(p part) {
		p.to = min(p.to, end)
		if p.from < p.to {
			out = append(out, p)
		}
	}
	cur := part{from: 1}
	for _, sp := range r.spans {
		cur.to = sp.from
		add(cur)
		cur = part{from: sp.from, base: int64(sp.attempt) << seqBits}
	}
	cur.to = end
	add(cur)
	return out
}

// locate returns the sequence of the event item keyed key, and whether it
// is part of the committed log: inside the part of the attempt its key
// belongs to (so below the head) and outside the holes.
func locate(ps []part, holes func(int64) bool, key int64) (seq int64, ok bool) {
	base := key >> seqBits << seqBits
	seq = key - base
	for _, p := range ps {
		if p.base == base && seq >= p.from && seq < p.to {
			return seq, !holes(seq)
		}
	}
	return seq, false
}

func (r *jobRec) id() string { return r.spec.GetJobId() }

// endedAt is when a final job ended: its result's finished_at, which every
// way of ending a job sets (storekit's outcomes, a rejection), and which,
// unlike updated_at, a later note does not move. updated_at stands in for
// a result without one.
func (r *jobRec) endedAt() time.Time {
	if f := r.result.GetFinishedAt(); f != nil {
		return f.AsTime()
	}
	return r.updatedAt
}
func (r *jobRec) queue() string { return r.spec.GetQueue() }

// priority is the job's priority (its book leaves the default out).
func (r *jobRec) priority() int32 { return priorityOf(r.book.GetPriority()) }

// url is the SQS queue of the job's messages: its queue's, at its
// priority.
func (s *Store) url(ctx context.Context, r *jobRec) (string, error) {
	return s.jobURL(ctx, r.queue(), r.priority())
}

// external reports whether the job keeps the log of a program spool did
// not start: it runs under store.ExternalLease, which never expires, and
// has no SQS message.
func (r *jobRec) external() bool { return r.spec.GetParams().GetExternal() != nil }

// inHole reports whether sequence seq lies in an abandoned reservation.
func (r *jobRec) inHole(seq int64) bool {
	for _, h := range r.holes {
		if seq >= h.from && seq < h.to {
			return true
		}
	}
	return false
}

// view is the job as the API shows it.
func (r *jobRec) view() *spoolv1.Job {
	j := proto.CloneOf(r.spec)
	j.State = r.state
	j.Attempt = r.attempt
	j.UpdatedAt = timestamppb.New(r.updatedAt)
	if !r.startedAt.IsZero() {
		j.StartedAt = timestamppb.New(r.startedAt)
	}
	j.CancelRequested = r.cancel
	j.Result = r.result
	storekit.SetBookkeeping(j, r.book)
	j.LastSequence = r.head.NextSequence - 1
	j.LineCount = r.head.NextLine - 1
	if r.state == spoolv1.JobState_JOB_STATE_RUNNING && !r.external() {
		j.LeaseExpiresAt = timestamppb.New(r.leaseExpires)
	}
	return j
}

// isJobItem reports whether a jobs-table item is a job (not a request
// marker).
func isJobItem(it item) bool { return getStr(it, aKind) == kindJob }

// decodeJob reads a job item.
func decodeJob(it item) (*jobRec, error) {
	id := getStr(it, aJobID)
	spec := &spoolv1.Job{}
	if err := proto.Unmarshal(getBin(it, aSpec), spec); err != nil {
		return nil, fmt.Errorf("job %s: stored spec is corrupt: %w", id, err)
	}
	r := &jobRec{spec: spec, leaseID: getStr(it, aLeaseID), msgID: getStr(it, aMessageID), cancel: getBool(it, aCancel)}
	n := ints{it: it}
	r.state = spoolv1.JobState(n.get(aState))
	r.attempt = int32(n.get(aAttempt))
	r.updatedAt = time.UnixMicro(n.get(aUpdatedAt)).UTC()
	if started := n.get(aStartedAt); started != 0 {
		r.startedAt = time.UnixMicro(started).UTC()
	}
	r.leaseExpires = time.UnixMicro(n.get(aLeaseExpires)).UTC()
	r.head = store.Head{NextSequence: n.get(aNextSeq), NextLine: n.get(aNextLine)}
	r.rev = n.get(aRev)
	r.srcOrd = n.get(aSrcOrd)
	r.watchedUntil = n.get(aWatchedUntil)
	if lease := getStr(it, aResLease); lease != "" {
		r.res = &reservation{seq: n.get(aResSeq), line: n.get(aResLine), lease: lease, at: time.UnixMicro(n.get(aResAt)).UTC()}
	}
	if n.err != nil {
		return nil, fmt.Errorf("job %s: %w", id, n.err)
	}
	if b := getBin(it, aResult); b != nil {
		r.result = &spoolv1.JobResult{}
		if err := proto.Unmarshal(b, r.result); err != nil {
			return nil, fmt.Errorf("job %s: stored result is corrupt: %w", id, err)
		}
	}
	r.book = &spoolv1.Job{}
	if err := proto.Unmarshal(getBin(it, aBook), r.book); err != nil {
		return nil, fmt.Errorf("job %s: stored bookkeeping is corrupt: %w", id, err)
	}
	holes, err := decodePairs(it, aHoles)
	if err != nil {
		return nil, fmt.Errorf("job %s: %w", id, err)
	}
	for _, h := range holes {
		r.holes = append(r.holes, hole{from: h[0], to: h[1]})
	}
	spans, err := decodePairs(it, aSpans)
	if err != nil {
		return nil, fmt.Errorf("job %s: %w", id, err)
	}
	for _, sp := range spans {
		r.spans = append(r.spans, span{attempt: int32(sp[0]), from: sp[1]})
	}
	return r, nil
}

// specOf is the fixed part of a job, stored once at enqueue.
func specOf(j *spoolv1.Job) *spoolv1.Job {
	return &spoolv1.Job{
		JobId:           j.GetJobId(),
		Queue:           j.GetQueue(),
		CreatedAt:       j.GetCreatedAt(),
		Params:          j.GetParams(),
		ExecutionConfig: j.GetExecutionConfig(),
		RequestId:       j.GetRequestId(),
		MaxAttempts:     j.GetMaxAttempts(),
		Retries:         j.GetRetries(),
	}
}

// bookValue is the book attribute of j.
func bookValue(j *spoolv1.Job) (types.AttributeValue, error) {
	b, err := marshal(storekit.Bookkeeping(j))
	if err != nil {
		return nil, err
	}
	return bin(b), nil
}

// newJobItem is the item of a job just created, with its sealed secrets
// (nil: none). Only a job born final (a rejected one) has a result and,
// with Config.JobTTL, a ttl, which the caller adds.
func newJobItem(j *spoolv1.Job, secrets []byte) (item, error) {
	spec, err := marshal(specOf(j))
	if err != nil {
		return nil, err
	}
	created := j.GetCreatedAt().AsTime()
	it := item{
		aJobID:      str(j.GetJobId()),
		aKind:       str(kindJob),
		aSpec:       bin(spec),
		aQueue:      str(j.GetQueue()),
		aListPart:   str(listPart),
		aCreatedKey: str(createdKey(created, j.GetJobId())),
		aState:      num(int32(j.GetState())),
		aAttempt:    num(j.GetAttempt()),
		aUpdatedAt:  num(j.GetUpdatedAt().AsTime().UnixMicro()),
		aCancel:     boolean(false),
		aNextSeq:    num(int64(1)),
		aNextLine:   num(int64(1)),
		aRev:        num(int64(1)),
	}
	addSecrets(it, secrets)
	if part, at := placeOf(j); part != "" {
		it[aLeasePart], it[aLeaseExpires] = str(part), num(at)
	}
	if j.GetStartedAt() != nil { // an external job starts when created
		it[aStartedAt] = num(j.GetStartedAt().AsTime().UnixMicro())
	}
	if j.GetResult() != nil { // a rejected job is failed from the start
		res, err := marshal(j.GetResult())
		if err != nil {
			return nil, err
		}
		it[aResult] = bin(res)
	}
	// The bookkeeping of a new job is empty but for rerun_of, which only
	// it holds (the spec is the fixed part the API was given).
	if book := storekit.Bookkeeping(j); proto.Size(book) > 0 {
		b, err := marshal(book)
		if err != nil {
			return nil, err
		}
		it[aBook] = bin(b)
	}
	return it, nil
}

// addSecrets puts a job's sealed secrets, if any, on its item or marker.
func addSecrets(it item, secrets []byte) {
	if len(secrets) > 0 {
		it[aSecrets] = bin(secrets)
	}
}

// createdKey orders jobs by creation time, then id, as a string: the sort
// key of both listing indexes. Fixed width keeps string order numeric.
func createdKey(t time.Time, id string) string {
	return fmt.Sprintf("%020d#%s", t.UnixMicro(), id)
}

// jobKey is the key of a job item.
func jobKey(id string) item { return item{aJobID: str(id)} }

// validID reports whether a job id can be a DynamoDB key at all: ids that
// cannot are simply not found.
func validID(id string) bool { return id != "" && len(id) <= 1024 }

func marshal(m proto.Message) ([]byte, error) {
	b, err := proto.MarshalOptions{Deterministic: true}.Marshal(m)
	if err != nil {
		return nil, fmt.Errorf("encode %T: %w", m, err)
	}
	return b, nil
}

// pairList is a list holding one pair of numbers, to append to a list of
// pairs (holes, spans).
func pairList(a, b int64) types.AttributeValue {
	pair := &types.AttributeValueMemberL{Value: []types.AttributeValue{num(a), num(b)}}
	return &types.AttributeValueMemberL{Value: []types.AttributeValue{pair}}
}

// appendPair adds to u the appending of the pair (a, b) to the list
// attribute attr, made if absent.
func appendPair(u *update, attr string, a, b int64) *update {
	e := u.e
	return u.SetExpr(attr, "list_append(if_not_exists("+e.n(attr)+", "+e.v(emptyList())+"), "+e.v(pairList(a, b))+")")
}

// abandon adds to u what turns r's pending reservation into a hole: the
// head moves past it (the line numbers do not: a hole holds no accepted
// output) and the reservation is gone. It returns the condition that the
// job is still as r has it, so only that reservation is abandoned.
func abandon(u *update, r *jobRec) string {
	e := u.e
	appendPair(u, aHoles, r.head.NextSequence, r.res.seq).
		Set(aNextSeq, num(r.res.seq)).
		Remove(reservationAttrs...)
	return and(e.eq(aNextSeq, num(r.head.NextSequence)), e.eq(aResLease, str(r.res.lease)), e.eq(aResSeq, num(r.res.seq)))
}

func emptyList() types.AttributeValue {
	return &types.AttributeValueMemberL{Value: []types.AttributeValue{}}
}

// decodePairs reads a list attribute of [a, b] number pairs (absent:
// none).
func decodePairs(it item, attr string) ([][2]int64, error) {
	v := it[attr]
	if v == nil {
		return nil, nil
	}
	l, ok := v.(*types.AttributeValueMemberL)
	if !ok {
		return nil, fmt.Errorf("attribute %s is %T, want a list", attr, v)
	}
	out := make([][2]int64, 0, len(l.Value))
	for _, e := range l.Value {
		pair, ok := e.(*types.AttributeValueMemberL)
		if !ok || len(pair.Value) != 2 {
			return nil, fmt.Errorf("attribute %s holds a malformed pair", attr)
		}
		n := ints{it: item{"a": pair.Value[0], "b": pair.Value[1]}}
		p := [2]int64{n.get("a"), n.get("b")}
		if n.err != nil {
			return nil, fmt.Errorf("attribute %s: %w", attr, n.err)
		}
		out = append(out, p)
	}
	return out, nil
}

// settle builds the update that writes a lease's outcome o into a job,
// as computed from r: state, result, bookkeeping, and no lease (the lease
// id stays when keepLease, for a repeated Complete); a final job gets its
// ttl.
func (s *Store) settle(e *expr, r *jobRec, o storekit.Outcome, keepLease bool, now time.Time) (*update, error) {
	j := r.view()
	o.Apply(j, now)
	book, err := bookValue(j)
	if err != nil {
		return nil, err
	}
	u := newUpdate(e).Set(aState, num(int32(o.State))).Set(aBook, book).Set(aUpdatedAt, num(now.UnixMicro())).BumpRev()
	place(u, j)
	if convert.State(o.State).IsFinal() {
		s.expireFinal(u, now)
	}
	if !keepLease {
		u.Remove(aLeaseID)
	}
	if o.Result != nil {
		b, err := marshal(o.Result)
		if err != nil {
			return nil, err
		}
		u.Set(aResult, bin(b))
	} else {
		u.Remove(aResult)
	}
	return u, nil
}

// placeOf is where a job that is not running, as j has it, sits in the
// leases index (see scheduledPart): a SCHEDULED job by the time it waits
// for, a final one owing webhooks by when they are due; "" for nowhere.
func placeOf(j *spoolv1.Job) (part string, at int64) {
	switch {
	case storekit.Scheduled(j):
		if j.GetRunAfter() != nil {
			at = j.GetRunAfter().AsTime().UnixMicro()
		}
		if waitsOnJobs(j) {
			return afterPart, at
		}
		return scheduledPart, at
	case j.GetNotifyDue() != nil && convert.State(j.GetState()).IsFinal():
		return notifyPart, j.GetNotifyDue().AsTime().UnixMicro()
	}
	return "", 0
}

// place adds to u j's place in the leases index (placeOf), for a write
// that leaves it not running.
func place(u *update, j *spoolv1.Job) {
	part, at := placeOf(j)
	if part == "" {
		u.Remove(aLeasePart, aLeaseExpires)
		return
	}
	u.Set(aLeasePart, str(part)).Set(aLeaseExpires, num(at))
}

// waitsOnJobs reports whether a scheduled job may still wait for the jobs
// it runs after: it has some, and never started (a retry's ran after them
// already).
func waitsOnJobs(j *spoolv1.Job) bool { return len(j.GetAfter()) > 0 && j.GetAttempt() == 0 }

// expireFinal adds to u the ttl of a job that becomes final at at, when
// final jobs expire (Config.JobTTL). Every write that makes a job final
// calls it, and nothing changes the ttl after, so a final job's ttl is
// its end plus JobTTL: DynamoDB drops it about when the retention sweeper
// (EndedBefore) would.
func (s *Store) expireFinal(u *update, at time.Time) {
	if ttl, ok := s.cfg.jobExpiry(at); ok {
		u.Set(aJobTTL, ttl)
	}
}
