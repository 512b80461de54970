package awsstore

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/spool-run/spool"
	spoolv1 "github.com/spool-run/spool/gen/spool/v1"
	"github.com/spool-run/spool/internal/apierr"
	"github.com/spool-run/spool/internal/backoff"
	"github.com/spool-run/spool/internal/store"
	"github.com/spool-run/spool/internal/store/storekit"
)

// Timing of Ingest calls that meet another call's reservation. doc.go
// explains the protocol; none of these times decides what is stored, only
// how long a call waits and when a reservation counts as abandoned.
const (
	// ingestAbandonAfter: a reservation not renewed for this long belongs
	// to a call that died or stalled, and is turned into a hole. A call
	// renews its reservation every third of it while it writes.
	ingestAbandonAfter = 30 * time.Second
	// ingestPatience bounds how long a call goes on trying (waiting for
	// other calls of its source, starting over after losing a race) before
	// it answers spool.ErrThrottled (the sender retries).
	ingestPatience = 10 * time.Second
	// The backoff between looks at a job another call is writing to.
	ingestFirstWait = 10 * time.Millisecond
	ingestMaxWait   = 250 * time.Millisecond
	// markerWriters is how many conditional marker writes a call has in
	// flight at once.
	markerWriters = 16
	// maxPlainID is the longest event id a marker key holds as it is;
	// longer ones (and ids that are not UTF-8) are hashed.
	maxPlainID = 1024
)

// Ingest implements store.IngestStore. Each round reads the source's open
// job, skips it while another call's reservation is pending (waiting, or
// turning an abandoned one into a hole), reads the events' markers to drop
// the events stored before, opens a job if the source has none open, and
// stores the rest with the reserve / write / commit steps of Append, under
// a claim of its own. A round that loses a race starts over.
func (s *Store) Ingest(ctx context.Context, req store.IngestRequest) (store.IngestResult, error) {
	if err := storekit.CheckIngest(req); err != nil {
		return store.IngestResult{}, err
	}
	k := sourceKeyOf(req.Source)
	evs := distinct(req.Events)
	c := claim{owner: rand.Text(), fence: func(e *expr) string {
		return leaseCond(e, store.LeaseRef{Attempt: 1, LeaseID: store.ExternalLease})
	}}
	wait := backoff.New(ingestFirstWait, ingestMaxWait)
	giveUp := time.Now().Add(s.patience)
	created := ""
	for round := 0; ; round++ {
		if round > 0 && time.Now().After(giveUp) {
			return store.IngestResult{}, apierr.Errorf(spool.ErrThrottled, "source %q is busy with other deliveries; retry", req.Source)
		}
		rec, r, err := s.sourceJob(ctx, req.Source, k)
		if err != nil {
			return store.IngestResult{}, err
		}
		open := r != nil && r.state == spoolv1.JobState_JOB_STATE_RUNNING
		if open && r.res != nil {
			// Another call is writing: wait for it to commit, unless it
			// has stopped renewing its reservation.
			if time.Since(r.res.at) >= s.abandonAfter {
				if err := s.takeOver(ctx, r); err != nil {
					return store.IngestResult{}, err
				}
				continue
			}
			if err := wait.Wait(ctx); err != nil {
				return store.IngestResult{}, err
			}
			continue
		}
		var current *jobRec
		if open {
			current = r
		}
		fresh, err := s.freshEvents(ctx, k, evs, current)
		if err != nil {
			return store.IngestResult{}, err
		}
		if !open {
			if len(fresh) == 0 {
				// Nothing new: a delivery seen before reopens nothing.
				return store.IngestResult{}, nil
			}
			if r, err = s.openSourceJob(ctx, req.Source, k, rec, req.Job); err != nil {
				return store.IngestResult{}, err
			}
			if r == nil {
				continue // another call opened one first: ingest into it
			}
			created = r.id()
		}
		if len(fresh) == 0 {
			return store.IngestResult{Job: r.view(), Created: created == r.id()}, nil
		}
		plan, accepted, err := storekit.PlanIngest(r.head, r.spec.GetExecutionConfig().GetBatching(), s.Limits(), fresh)
		if err != nil {
			return store.IngestResult{}, err
		}
		done, err := s.storeIngested(ctx, k, r, plan, accepted, c)
		if err != nil {
			return store.IngestResult{}, err
		}
		if done != nil {
			return store.IngestResult{Job: done.view(), Created: created == r.id(), Accepted: len(accepted)}, nil
		}
		// The job changed between the read and the reservation: decide
		// again on it as it is now.
		if err := wait.Wait(ctx); err != nil {
			return store.IngestResult{}, err
		}
	}
}

// distinct drops repeats of an event id within one call (the caller should
// send none): the first is the one stored.
func distinct(evs []store.RawEvent) []store.RawEvent {
	seen := make(map[string]bool, len(evs))
	out := make([]store.RawEvent, 0, len(evs))
	for _, e := range evs {
		if !seen[e.ID] {
			seen[e.ID] = true
			out = append(out, e)
		}
	}
	return out
}

// takeOver turns the abandoned reservation of another call into a hole, so
// the log goes on after it: whatever that call writes there, whenever it
// does, readers skip, and its commit is refused.
func (s *Store) takeOver(ctx context.Context, r *jobRec) error {
	e := newExpr()
	u := newUpdate(e)
	_, ok, err := s.updateJob(ctx, r.id(), u, and(isJob(e), abandon(u, r)))
	if err == nil && ok {
		s.log.Warn("an ingest call stopped before committing; its range of the log is left as a gap", "job", r.id(),
			"from_sequence", r.head.NextSequence, "to_sequence", r.res.seq-1, "reserved_at", r.res.at)
	}
	return err
}

// storeIngested stores a planned call: reserve, write the log's items, the
// accepted events and the markers, commit. It returns the job as
// committed, or nil when the reservation was refused (the job moved since
// r was read). A commit that is refused is an error: the call's range was
// taken over (it was too slow) or the job ended; nothing of it shows, and
// the sender's retry stores the events.
func (s *Store) storeIngested(ctx context.Context, k sourceKey, r *jobRec, plan storekit.AppendPlan, accepted []store.Accepted, c claim) (*jobRec, error) {
	ok, err := s.reserveRange(ctx, r, plan.Head, c)
	if err != nil || !ok {
		return nil, err
	}
	if err := runHook(ctx, s.hooks.afterIngestReserve); err != nil {
		return nil, err
	}
	stop := s.keepReserved(ctx, r.id(), c.owner)
	err = s.writeIngested(ctx, k, r, plan, accepted)
	stop()
	if err != nil {
		s.release(ctx, r, plan.Head, c)
		return nil, err
	}
	if err := runHook(ctx, s.hooks.afterIngestWrite); err != nil {
		return nil, err
	}
	done, ok, err := s.commitRange(ctx, r, plan.Head, c)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, apierr.Errorf(spool.ErrThrottled, "job %s: this delivery was not stored (it took too long and another took over, or the job ended); retry", r.id())
	}
	return done, nil
}

// writeIngested writes what a call stores: the log's items and the
// accepted events (no conditions needed: they lie in the call's reserved
// range, which nobody else ever writes), then a marker per event.
func (s *Store) writeIngested(ctx context.Context, k sourceKey, r *jobRec, plan storekit.AppendPlan, accepted []store.Accepted) error {
	chunks, err := s.acceptedItems(r.id(), r.head.NextSequence, accepted)
	if err != nil {
		return err
	}
	if err := s.putAll(ctx, s.cfg.EventsTable, append(s.eventItems(r.id(), 0, plan.Items), chunks...)); err != nil {
		return err
	}
	return s.putMarkers(ctx, k, r, accepted)
}

// release gives up a reservation after a failed write, so the next call
// need not wait for it to be abandoned: it becomes a hole. Best effort:
// if this fails too, the reservation is abandoned later.
func (s *Store) release(ctx context.Context, r *jobRec, to store.Head, c claim) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	mine := *r
	mine.res = &reservation{seq: to.NextSequence, line: to.NextLine, lease: c.owner}
	e := newExpr()
	u := newUpdate(e)
	if _, _, err := s.updateJob(ctx, r.id(), u, and(isJob(e), abandon(u, &mine))); err != nil {
		s.log.Warn("could not give up the reservation of a failed ingest call; it is taken over later", "job", r.id(), "error", err)
	}
}

// keepReserved renews the call's reservation while it writes (a call of
// many events may take longer than ingestAbandonAfter), so other calls do
// not take it over. stop ends the renewals and waits for them.
func (s *Store) keepReserved(ctx context.Context, jobID, owner string) (stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Go(func() {
		t := time.NewTicker(s.abandonAfter / 3)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
			e := newExpr()
			u := newUpdate(e).Set(aResAt, num(storekit.Now().UnixMicro()))
			if _, ok, err := s.updateJob(ctx, jobID, u, e.eq(aResLease, str(owner))); err != nil || !ok {
				return // taken over, or failing: the commit will tell
			}
		}
	})
	return func() { cancel(); wg.Wait() }
}

// marker is what an event's marker says: which job and call accepted it.
type marker struct {
	job   string
	group int64
}

// seenKey is the key of an event's marker: one partition per event id of
// a source, so a call finds its events' markers with BatchGetItem. An id
// too long for a key, or not UTF-8, is hashed; the two forms cannot meet.
func seenKey(k sourceKey, id string) item {
	part := seenKeyPrefix + string(k)
	if len(id) <= maxPlainID && utf8.ValidString(id) {
		part += "#i#" + id
	} else {
		sum := sha256.Sum256([]byte(id))
		part += "#h#" + hex.EncodeToString(sum[:])
	}
	return eventKey(part, 0)
}

// freshEvents drops the events a source has stored before: those whose
// marker is committed, that is, lies below its job's head and outside its
// holes. open is the source's open job as read before the markers (nil if
// none); the reservation is made on condition that its head has not moved
// since, so a commit after it cannot be missed. Markers of other jobs (the
// source's ended ones, whose heads no longer move) are checked against
// those jobs, read now.
func (s *Store) freshEvents(ctx context.Context, k sourceKey, evs []store.RawEvent, open *jobRec) ([]store.RawEvent, error) {
	keys := make([]item, len(evs))
	for i, e := range evs {
		keys[i] = seenKey(k, e.ID)
	}
	items, err := s.batchGet(ctx, s.cfg.EventsTable, keys, consistent(aJobID, aTarget, aGroup))
	if err != nil {
		return nil, err
	}
	markers := make(map[string]marker, len(items))
	jobs := map[string]*jobRec{}
	if open != nil {
		jobs[open.id()] = open
	}
	var others []item
	for _, it := range items {
		m := marker{job: getStr(it, aTarget)}
		if m.group, err = getInt(it, aGroup); err != nil {
			return nil, err
		}
		markers[getStr(it, aJobID)] = m
		if _, ok := jobs[m.job]; !ok && validID(m.job) {
			jobs[m.job] = nil
			others = append(others, jobKey(m.job))
		}
	}
	if len(others) > 0 {
		items, err := s.batchGet(ctx, s.cfg.JobsTable, others, consistent(aJobID, aKind, aNextSeq, aHoles))
		if err != nil {
			return nil, err
		}
		for _, it := range items {
			if !isJobItem(it) {
				continue
			}
			r, err := decodeJob(it) // its head and holes: the rest is not read
			if err != nil {
				return nil, err
			}
			jobs[getStr(it, aJobID)] = r
		}
	}
	fresh := make([]store.RawEvent, 0, len(evs))
	for i, e := range evs {
		m, ok := markers[getStr(keys[i], aJobID)]
		if j := jobs[m.job]; ok && j != nil && m.group < j.head.NextSequence && !j.inHole(m.group) {
			continue
		}
		fresh = append(fresh, e)
	}
	return fresh, nil
}

// errMarkerSuperseded: a marker of a later call was there already, so this
// call's reservation was taken over and it must not commit.
var errMarkerSuperseded = errors.New("a later delivery has stored some of these events")

// putMarkers writes the markers of a call's accepted events. Each write is
// conditional: it replaces only a marker of an earlier call (an older job
// of the source, or an earlier range of this job), never a later one. A
// call that stalled past the takeover of its reservation and writes late
// must not overwrite the marker of the call that stored its events after
// it, or the events would count as not stored and be stored again.
// BatchWriteItem takes no conditions, so these are PutItems,
// markerWriters at a time: the same write capacity, more requests.
func (s *Store) putMarkers(ctx context.Context, k sourceKey, r *jobRec, accepted []store.Accepted) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	ttl := num(time.Now().Add(s.cfg.eventsTTL()).Unix())
	group := r.head.NextSequence
	work := make(chan store.Accepted)
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		first error
	)
	fail := func(err error) {
		mu.Lock()
		defer mu.Unlock()
		if first == nil {
			first = err
			cancel()
		}
	}
	for range min(markerWriters, len(accepted)) {
		wg.Go(func() {
			for a := range work {
				it := seenKey(k, a.ID)
				it[aTarget] = str(r.id())
				it[aSrcOrd] = num(r.srcOrd)
				it[aGroup] = num(group)
				it[aLine] = num(a.Line)
				it[aTTL] = ttl
				e := newExpr()
				cond := "attribute_not_exists(" + e.n(aJobID) + ") OR " + e.n(aSrcOrd) + " < " + e.v(num(r.srcOrd)) +
					" OR (" + and(e.eq(aSrcOrd, num(r.srcOrd)), e.n(aGroup)+" <= "+e.v(num(group))) + ")"
				_, err := s.clients.db.PutItem(ctx, &dynamodb.PutItemInput{
					TableName:                 aws.String(s.cfg.EventsTable),
					Item:                      it,
					ConditionExpression:       aws.String(cond),
					ExpressionAttributeNames:  e.names,
					ExpressionAttributeValues: e.values,
				})
				switch {
				case conditionFailed(err):
					fail(apierr.Errorf(spool.ErrThrottled, "job %s: %w; this delivery was not stored", r.id(), errMarkerSuperseded))
				case err != nil:
					fail(awsErr(err, "write the marker of event %q of job %s", a.ID, r.id()))
				}
			}
		})
	}
feed:
	for _, a := range accepted {
		select {
		case work <- a:
		case <-ctx.Done():
			break feed
		}
	}
	close(work)
	wg.Wait()
	if first == nil {
		first = ctx.Err() // the caller's context ended
	}
	return first
}
