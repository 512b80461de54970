package awsstore

import (
	"cmp"
	"context"
	"errors"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/spool-run/spool"
	spoolv1 "github.com/spool-run/spool/gen/spool/v1"
	"github.com/spool-run/spool/internal/store"
	"github.com/spool-run/spool/internal/store/storekit"
)

const (
	// reanchorAfter: a receive that took longer than its wait by more
	// than this would leave its leases that much short of what was asked,
	// so the messages' visibility is set again from now (see expiries).
	reanchorAfter = time.Second
	// missingJobGrace: a message may be received between its send and
	// the write of its job (see Enqueue). Until it is this old, a message
	// without a job is put back for missingJobRetry, not dropped.
	missingJobGrace = time.Minute
	missingJobRetry = 5 * time.Second
	// unsettledRetry: a message whose job's lease ran out waits this long
	// for a reaper (every server runs one, each second) to queue the job
	// again.
	unsettledRetry = 2 * time.Second
)

// Dequeue implements store.JobStore: SQS long polls (up to 20 s each)
// until a message leads to a lease or r.Wait has passed. One receive
// brings at most maxReceive messages, so once one has led to leases, more
// receives follow without waiting (receiveMore) until r.Max are leased or
// the queue has no more ready now. A queue with priorities other than the
// default has an SQS queue for each (see priority.go): each round polls
// them, highest first, without waiting, then long-polls the default one
// for at most priorityPollSeconds, so a job of a higher priority waits no
// longer than that for an idle worker. A limited queue (see limits.go)
// leases no more than its free slots.
func (s *Store) Dequeue(ctx context.Context, r store.DequeueRequest) ([]store.Lease, error) {
	n := store.DequeueLimit(r.Max)
	vis := clampVisibility(r.LeaseDuration)
	deadline := time.Now().Add(r.Wait)
	for {
		lr, err := s.settings(ctx, r.Queue)
		if err != nil {
			return nil, err
		}
		urls, def, err := s.pollURLs(ctx, r.Queue, lr.prios)
		if err != nil {
			return nil, err
		}
		room, err := s.room(ctx, r.Queue, lr)
		if err != nil {
			return nil, err
		}
		want := n
		if room >= 0 {
			want = min(n, room)
		}
		if want > 0 {
			got, err := s.poll(ctx, urls, def, want, vis, deadline, room >= 0)
			if err != nil || len(got) > 0 {
				return got, err
			}
		}
		if time.Until(deadline) <= 0 {
			return nil, nil
		}
		if want == 0 {
			// Every slot is taken: look again in a while.
			t := time.NewTimer(min(limitRetry, time.Until(deadline)))
			select {
			case <-t.C:
			case <-ctx.Done():
				t.Stop()
			}
		}
		if err := ctx.Err(); err != nil {
			return nil, err
		}
	}
}

// priorityPollSeconds bounds the long poll of a queue's default priority
// while it has others, whose queues are polled between long polls.
const priorityPollSeconds = 2

// poll is one round of receives for up to n leases: the priority queues
// urls (highest first) without waiting, when there are several, then the
// default one (urls[def]) with a long poll, unless the round leased jobs.
func (s *Store) poll(ctx context.Context, urls []string, def, n int, vis time.Duration, deadline time.Time, limited bool) ([]store.Lease, error) {
	wait := pollSeconds(time.Until(deadline))
	if len(urls) > 1 {
		var got []store.Lease
		for _, url := range urls {
			rc := s.receive(ctx, url, min(n-len(got), maxReceive), vis, 0, limited)
			if rc.err != nil {
				if len(got) == 0 {
					return nil, rc.err
				}
				s.log.Warn("could not receive from an SQS queue of a priority", "queue_url", url, "error", rc.err)
				break
			}
			if len(rc.leases) > 0 {
				got = append(got, s.receiveMore(ctx, url, n-len(got), vis, rc, limited)...)
			}
			if len(got) >= n {
				break
			}
		}
		if len(got) > 0 || wait == 0 {
			sortLeases(got)
			return got, nil
		}
		wait = min(wait, priorityPollSeconds)
	}
	url := urls[def]
	rc := s.receive(ctx, url, min(n, maxReceive), vis, wait, limited)
	if rc.err != nil || len(rc.leases) == 0 {
		return nil, rc.err
	}
	return s.receiveMore(ctx, url, n, vis, rc, limited), nil
}

// pollSeconds is the wait of the next receive, with left to wait: SQS
// waits whole seconds, at most longPollSeconds, so the time left is
// rounded up. Rounded down, a wait of 20 s measured from a moment ago
// (19.99 s) became a long poll of 19 s and then short polls every
// PollInterval for the last second: six requests for one idle wait.
// Rounding up waits at most a second past the deadline, and the API's
// waits are whole seconds, so in practice by the time it took to get
// here.
func pollSeconds(left time.Duration) int32 {
	if left <= 0 {
		return 0
	}
	return int32(min((left+time.Second-1)/time.Second, longPollSeconds))
}

const (
	// maxReceive is the most messages one ReceiveMessage call returns.
	maxReceive = 10
	// receivesAtOnce bounds the receives one Dequeue makes side by side,
	// and so the claims (a read and a conditional write of DynamoDB each)
	// it has in flight: maxReceive times as many.
	receivesAtOnce = 8
)

// received is what one receive brought: the leases its messages led to,
// and whether SQS filled the request (so more may be ready).
type received struct {
	leases []store.Lease
	full   bool
	err    error
}

// receiveMore adds to first's leases, up to n, with rounds of receives
// made side by side that do not wait for messages: a round ends the
// search when any of its receives found the queue with fewer ready than
// it asked for. An error after leases were granted is logged, not
// returned: the leases stand, and the caller would otherwise lose them
// until they expired.
func (s *Store) receiveMore(ctx context.Context, url string, n int, vis time.Duration, first received, limited bool) []store.Lease {
	got, more := first.leases, first.full
	for more && len(got) < n && ctx.Err() == nil {
		want := n - len(got)
		round := make([]received, min((want+maxReceive-1)/maxReceive, receivesAtOnce))
		var wg sync.WaitGroup
		for i := range round {
			k := min(want-i*maxReceive, maxReceive)
			wg.Go(func() { round[i] = s.receive(ctx, url, k, vis, 0, limited) })
		}
		wg.Wait()
		for _, rc := range round {
			got = append(got, rc.leases...)
			more = more && rc.full
			if rc.err != nil {
				more = false
				s.log.Warn("could not receive more SQS messages for a batch of leases", "queue_url", url, "error", rc.err)
			}
		}
	}
	sortLeases(got)
	return got
}

// sortLeases orders leases highest priority first, then oldest first, as
// Dequeue promises.
func sortLeases(ls []store.Lease) {
	slices.SortFunc(ls, func(a, b store.Lease) int {
		return cmp.Or(cmp.Compare(a.Job.GetPriority(), b.Job.GetPriority()),
			a.Job.GetCreatedAt().AsTime().Compare(b.Job.GetCreatedAt().AsTime()), cmp.Compare(a.JobID, b.JobID))
	})
}

// receive makes one ReceiveMessage call for up to n (at most maxReceive)
// messages and leases the jobs they name, oldest first; limited: each
// takes a slot of the queue's max_running first.
func (s *Store) receive(ctx context.Context, url string, n int, vis time.Duration, wait int32, limited bool) received {
	start := storekit.Now()
	// The messages are hidden for the lease plus the wait: SQS starts
	// hiding a message when it hands it out, any time during the wait,
	// so the lease can run its full length from the answer and still end
	// before SQS shows the message again, with no change of visibility
	// after the receive (see expiries).
	hidden := clampVisibility(vis + time.Duration(wait)*time.Second)
	out, err := s.clients.sqs.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{
		QueueUrl:            aws.String(url),
		MaxNumberOfMessages: int32(n),
		VisibilityTimeout:   visSeconds(hidden),
		WaitTimeSeconds:     wait,
	})
	if err != nil {
		return received{err: awsErr(err, "receive from SQS queue %s", url)}
	}
	if len(out.Messages) == 0 {
		return received{}
	}
	expires := s.expiries(ctx, url, out.Messages, start, hidden, vis)
	leases := make([]*store.Lease, len(out.Messages))
	errs := make([]error, len(out.Messages))
	var wg sync.WaitGroup
	for i, m := range out.Messages {
		wg.Go(func() { leases[i], errs[i] = s.claim(ctx, url, m, expires[i], limited) })
	}
	wg.Wait()
	rc := received{full: len(out.Messages) >= n}
	for _, l := range leases {
		if l != nil {
			rc.leases = append(rc.leases, *l)
		}
	}
	sortLeases(rc.leases)
	if err := errors.Join(errs...); err != nil {
		if len(rc.leases) == 0 {
			return received{err: err}
		}
		// The leases granted stand; the other messages come back.
		s.log.Warn("some received SQS messages could not be handled", "error", err)
	}
	return rc
}

// expiries returns, for each message of a receive that started at start
// and asked SQS to hide its messages for hidden, when its lease ends: vis
// from now, but never after start+hidden, before which SQS cannot show the
// message again (it started hiding it after start). So a message is never
// received while its job's lease is current (apart from SQS's rare
// duplicate deliveries, which claim handles).
//
// hidden covers the receive's own wait, so normally the lease gets all of
// vis and SQS is asked nothing more. Only a receive that took longer than
// its wait by more than reanchorAfter (a slow network), whose leases
// would be short by that much, has its messages' visibility set again from
// now. The price of the margin: a job whose worker dies before its first
// heartbeat (which sets the visibility to the lease) is received again up
// to the wait later than its lease ran out.
func (s *Store) expiries(ctx context.Context, url string, msgs []sqstypes.Message, start time.Time, hidden, vis time.Duration) []time.Time {
	now := storekit.Now()
	end := now.Add(vis)
	if last := start.Add(hidden); last.Before(end) {
		end = last
	}
	out := make([]time.Time, len(msgs))
	for i := range out {
		out[i] = end
	}
	if now.Add(vis).Sub(end) <= reanchorAfter {
		return out
	}
	entries := make([]sqstypes.ChangeMessageVisibilityBatchRequestEntry, len(msgs))
	for i, m := range msgs {
		entries[i] = sqstypes.ChangeMessageVisibilityBatchRequestEntry{Id: aws.String(strconv.Itoa(i)), ReceiptHandle: m.ReceiptHandle, VisibilityTimeout: visSeconds(vis)}
	}
	res, err := s.clients.sqs.ChangeMessageVisibilityBatch(ctx, &sqs.ChangeMessageVisibilityBatchInput{QueueUrl: aws.String(url), Entries: entries})
	if err != nil {
		s.log.Warn("could not restart the visibility of received SQS messages", "error", err)
		return out
	}
	for _, ok := range res.Successful {
		if i, err := strconv.Atoi(aws.ToString(ok.Id)); err == nil && i < len(out) {
			out[i] = now.Add(vis)
		}
	}
	return out
}

// claim leases the job a message names, or deals with a message that
// should not lead to one: undecodable or naming no job (dropped), naming
// a finished job (dropped: its work is done), naming a job under a current
// lease (a duplicate delivery: hidden until that lease ends). A lease is a
// conditional update on the attempt read, so when SQS hands one message to
// two receivers at once, only one gets the job.
func (s *Store) claim(ctx context.Context, url string, m sqstypes.Message, expires time.Time, limited bool) (*store.Lease, error) {
	handle := aws.ToString(m.ReceiptHandle)
	msg, err := decodeMessage(aws.ToString(m.Body))
	if err != nil {
		s.log.Warn("dropping a poison SQS message", "queue_url", url, "error", err)
		s.drop(ctx, url, handle)
		return nil, nil
	}
	r, err := s.getJob(ctx, msg.JobID)
	if errors.Is(err, spool.ErrNotFound) {
		if t, ok := msg.sentAt(); ok && time.Since(t) < missingJobGrace {
			r, err = s.awaitJob(ctx, msg.JobID)
		}
	}
	if errors.Is(err, spool.ErrNotFound) {
		if t, ok := msg.sentAt(); ok && time.Since(t) < missingJobGrace {
			s.hide(ctx, url, handle, missingJobRetry)
			return nil, nil
		}
		s.log.Warn("dropping an SQS message for an unknown job", "job", msg.JobID)
		s.drop(ctx, url, handle)
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if r.external() {
		// Nothing enqueues an external job: a message naming one is not
		// spool's, and its job is leased by nobody.
		s.log.Warn("dropping an SQS message naming an external job", "job", r.id())
		s.drop(ctx, url, handle)
		return nil, nil
	}
	now := storekit.Now()
	if s.setAside(ctx, url, handle, r, now) {
		return nil, nil
	}
	if r.state == spoolv1.JobState_JOB_STATE_RUNNING {
		// Its lease ran out, and no reaper has settled it yet. Only a
		// reaper does, after giving grace to leases an outage of DynamoDB
		// kept from their heartbeats (store.Sweep): look again once it has.
		s.hide(ctx, url, handle, unsettledRetry)
		return nil, nil
	}
	if !limited {
		return s.lease(ctx, r, handle, aws.ToString(m.MessageId), expires)
	}
	ok, err := s.hold(ctx, r)
	if err != nil {
		return nil, err
	}
	if !ok {
		s.hide(ctx, url, handle, limitRetry)
		return nil, nil
	}
	l, err := s.lease(ctx, r, handle, aws.ToString(m.MessageId), expires)
	if l == nil {
		s.unhold(ctx, r.queue(), r.id(), r.attempt+1)
	}
	return l, err
}

// missingJobWaits are the pauses between reads of a job whose message
// came before it was written. Enqueue sends the message, then writes the
// job; a worker long-polling the queue receives the message at once and
// usually reads the job while that write is on its way. Reading again a
// few times within a second costs a read unit or two; hiding the message
// instead costs a change of visibility, another receive and missingJobRetry
// of the job's time.
var missingJobWaits = []time.Duration{20 * time.Millisecond, 50 * time.Millisecond, 100 * time.Millisecond, 250 * time.Millisecond, 500 * time.Millisecond}

// awaitJob reads a job that was missing again after each of
// missingJobWaits, until it is there.
func (s *Store) awaitJob(ctx context.Context, id string) (*jobRec, error) {
	err := store.JobNotFound(id)
	for _, d := range missingJobWaits {
		t := time.NewTimer(d)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return nil, ctx.Err()
		}
		var r *jobRec
		if r, err = s.getJob(ctx, id); !errors.Is(err, spool.ErrNotFound) {
			return r, err
		}
	}
	return nil, err
}

// lease starts the next attempt of a queued job under the message's
// receipt handle. From the second attempt on, the attempt's items are keyed
// apart from the earlier attempts', whose late writes then cannot reach
// its log; a reservation left by an older version of this store's append
// becomes a hole, and the new attempt's log continues after it: see
// doc.go on fencing.
//
// The attempt's part of the log begins at the head as read, so the lease
// is made on condition that the head has not moved: an attempt whose lease
// ran out may still commit output while its job waits queued (see
// appendCond), and events it commits after the read must stay in its own
// part. When only the head moved, the lease is tried again on the job as
// it is now.
func (s *Store) lease(ctx context.Context, r *jobRec, handle, msgID string, expires time.Time) (*store.Lease, error) {
	for range raceRounds {
		if err := runHook(ctx, s.hooks.beforeLease); err != nil {
			return nil, err
		}
		nr, ok, err := s.leaseAs(ctx, r, handle, msgID, expires)
		if err != nil || ok {
			return nr, err
		}
		now, err := s.getJob(ctx, r.id())
		if errors.Is(err, spool.ErrNotFound) {
			return nil, nil // deleted: its message is dropped at its next receive
		}
		if err != nil {
			return nil, err
		}
		if now.state != r.state || now.attempt != r.attempt {
			// Leased by another receiver, or changed otherwise: the
			// message is dealt with at its next receive.
			return nil, nil
		}
		r = now
	}
	return nil, nil
}

// leaseAs leases the job as r has it; ok is false when it changed since.
func (s *Store) leaseAs(ctx context.Context, r *jobRec, handle, msgID string, expires time.Time) (*store.Lease, bool, error) {
	now := storekit.Now()
	e := newExpr()
	// Each attempt starts when it is leased: started_at moves with it.
	u := newUpdate(e).
		Set(aState, num(int32(spoolv1.JobState_JOB_STATE_RUNNING))).
		Set(aAttempt, num(r.attempt+1)).
		Set(aLeaseID, str(handle)).
		Set(aMessageID, str(msgID)).
		Set(aLeaseExpires, num(expires.UnixMicro())).
		Set(aLeasePart, str(leasePart)).
		Set(aUpdatedAt, num(now.UnixMicro())).
		Set(aStartedAt, num(now.UnixMicro())).
		BumpRev()
	cond := []string{isJob(e), e.eq(aState, num(int32(r.state))), e.eq(aAttempt, num(r.attempt))}
	if r.state == spoolv1.JobState_JOB_STATE_SCHEDULED {
		// Leased as its promotion would have queued it (see setAside):
		// its run_after goes, and the book is rewritten whole, so
		// nothing may have changed it.
		j := r.view()
		storekit.Promote().Apply(j, now)
		book, err := bookValue(j)
		if err != nil {
			return nil, false, err
		}
		u.Set(aBook, book)
		cond = append(cond, e.eq(aRev, num(r.rev)))
	}
	start := r.head.NextSequence
	if r.res == nil {
		cond = append(cond, "attribute_not_exists("+e.n(aResLease)+")", e.eq(aNextSeq, num(r.head.NextSequence)))
	} else {
		cond = append(cond, abandon(u, r)) // on the head as read, too
		start = r.res.seq
	}
	if r.attempt > 0 {
		// Every attempt after the first keys its items apart, from where
		// its log begins: see keyBase.
		appendPair(u, aSpans, int64(r.attempt+1), start)
	}
	nr, ok, err := s.updateJob(ctx, r.id(), u, and(cond...))
	if err != nil || !ok {
		return nil, false, err
	}
	if r.res != nil {
		s.log.Warn("an earlier attempt's unfinished append left a gap in the log", "job", r.id(),
			"from_sequence", r.head.NextSequence, "to_sequence", r.res.seq-1)
	}
	return &store.Lease{
		LeaseRef:  store.LeaseRef{JobID: nr.id(), Queue: nr.queue(), Attempt: nr.attempt, LeaseID: handle},
		Job:       nr.view(),
		ExpiresAt: nr.leaseExpires,
		Head:      nr.head,
	}, true, nil
}
