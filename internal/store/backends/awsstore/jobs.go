package awsstore

import (
	"context"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/spool-run/spool"
	spoolv1 "github.com/spool-run/spool/gen/spool/v1"
	"github.com/spool-run/spool/internal/apierr"
	"github.com/spool-run/spool/internal/store"
	"github.com/spool-run/spool/internal/store/storekit"
)

// getJob reads a job with a strongly consistent read: every decision the
// store makes starts from the job as it is now.
func (s *Store) getJob(ctx context.Context, id string) (*jobRec, error) {
	if !validID(id) {
		return nil, store.JobNotFound(id)
	}
	out, err := s.clients.db.GetItem(ctx, &dynamodb.GetItemInput{
		TableName:      aws.String(s.cfg.JobsTable),
		Key:            jobKey(id),
		ConsistentRead: aws.Bool(true),
	})
	if err != nil {
		return nil, awsErr(err, "read job %s", id)
	}
	if out.Item == nil || !isJobItem(out.Item) {
		return nil, store.JobNotFound(id)
	}
	return s.decodeJob(out.Item)
}

// decodeJob reads a job item this Store just read or wrote, and notes
// whether a replica has followers of it (see shares): publishes and
// heartbeats read it anyway.
func (s *Store) decodeJob(it item) (*jobRec, error) {
	r, err := decodeJob(it)
	if err == nil {
		s.shares.note(r.id(), r.watchedUntil)
	}
	return r, err
}

// Get implements store.JobStore.
func (s *Store) Get(ctx context.Context, id string) (*spoolv1.Job, error) {
	r, err := s.getJob(ctx, id)
	if err != nil {
		return nil, err
	}
	return r.view(), nil
}

// JobSecrets implements store.JobStore: the secrets attribute of the job
// item, read strongly consistent (a lease may follow the enqueue at once).
func (s *Store) JobSecrets(ctx context.Context, id string) ([]byte, error) {
	if !validID(id) {
		return nil, store.JobNotFound(id)
	}
	e := newExpr()
	out, err := s.clients.db.GetItem(ctx, &dynamodb.GetItemInput{
		TableName:                aws.String(s.cfg.JobsTable),
		Key:                      jobKey(id),
		ConsistentRead:           aws.Bool(true),
		ProjectionExpression:     aws.String(e.n(aKind) + ", " + e.n(aSecrets)),
		ExpressionAttributeNames: e.names,
	})
	if err != nil {
		return nil, awsErr(err, "read the secrets of job %s", id)
	}
	if out.Item == nil || !isJobItem(out.Item) {
		return nil, store.JobNotFound(id)
	}
	return getBin(out.Item, aSecrets), nil
}

// updateJob applies u to a job if cond holds. ok is false when it did not
// (someone changed the job first, or it does not exist). A change that
// bumps rev wakes this server's watchers of the job at once; other
// servers' see it at their next poll.
func (s *Store) updateJob(ctx context.Context, id string, u *update, cond string) (r *jobRec, ok bool, err error) {
	out, err := s.clients.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                 aws.String(s.cfg.JobsTable),
		Key:                       jobKey(id),
		UpdateExpression:          aws.String(u.String()),
		ConditionExpression:       aws.String(cond),
		ExpressionAttributeNames:  u.e.names,
		ExpressionAttributeValues: u.e.valuesOrNil(),
		ReturnValues:              types.ReturnValueAllNew,
	})
	if conditionFailed(err) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, awsErr(err, "update job %s", id)
	}
	r, err = s.decodeJob(out.Attributes)
	if err != nil {
		return nil, false, err
	}
	if u.bumped {
		s.watch.changed(id, r.rev)
	}
	return r, true, nil
}

// raceRounds bounds how often an operation starts over after losing a
// race with another change of the job (each round re-reads it).
const raceRounds = 5

// errBusy is returned when an operation lost that many races in a row.
func errBusy(jobID string) error {
	return apierr.Errorf(spool.ErrThrottled, "job %s kept changing under this request; retry", jobID)
}

// isJob is the condition that the item is a job (not a request marker, not
// missing).
func isJob(e *expr) string { return e.eq(aKind, str(kindJob)) }

// Cancel implements store.JobStore: a queued or scheduled job is cancelled
// at once (a queued one's SQS message is dropped when next received); a
// running one is marked, and
// its worker learns at its next heartbeat.
func (s *Store) Cancel(ctx context.Context, id, reason string) (*spoolv1.Job, error) {
	for range raceRounds {
		r, err := s.getJob(ctx, id)
		if err != nil {
			return nil, err
		}
		e := newExpr()
		u := newUpdate(e)
		now := storekit.Now()
		var cond string
		switch {
		case r.state == spoolv1.JobState_JOB_STATE_QUEUED, r.state == spoolv1.JobState_JOB_STATE_SCHEDULED:
			if u, err = s.settle(e, r, storekit.CancelBeforeStart(reason, now), false, now); err != nil {
				return nil, err
			}
			// The book is rewritten whole: nothing may have changed it.
			cond = and(e.eq(aState, num(int32(r.state))), e.eq(aAttempt, num(r.attempt)), e.eq(aRev, num(r.rev)))
		case r.state == spoolv1.JobState_JOB_STATE_RUNNING && !r.cancel:
			j := r.view()
			j.CancelReason = reason
			book, err := bookValue(j)
			if err != nil {
				return nil, err
			}
			u.Set(aCancel, boolean(true)).Set(aBook, book).Set(aUpdatedAt, num(now.UnixMicro())).BumpRev()
			cond = and(e.eq(aState, num(int32(r.state))), e.eq(aAttempt, num(r.attempt)), e.eq(aRev, num(r.rev)))
		default:
			return r.view(), nil // final, or already marked
		}
		done, ok, err := s.updateJob(ctx, id, u, cond)
		if err != nil {
			return nil, err
		}
		if ok {
			return done.view(), nil
		}
		// The job moved on (leased, finished) meanwhile: decide again.
	}
	return nil, errBusy(id)
}

// AddNote implements store.JobStore. A note is a change of the job's:
// updated_at moves (but not a final job's end, nor its ttl).
func (s *Store) AddNote(ctx context.Context, id, note string) (*spoolv1.Job, error) {
	return s.editBook(ctx, id, func(j *spoolv1.Job) bool {
		storekit.AddNote(j, note)
		j.UpdatedAt = timestamppb.New(storekit.Now())
		return true
	})
}

// AddRerun implements store.JobStore. A link is not a change of the job's
// own: updated_at stays, so retention still counts from the job's end.
func (s *Store) AddRerun(ctx context.Context, id, rerunID string) (*spoolv1.Job, error) {
	return s.editBook(ctx, id, func(j *spoolv1.Job) bool { return storekit.AddRerun(j, rerunID) })
}

// editBook changes the bookkeeping of a job (see storekit.Bookkeeping)
// with fn, which reports whether it changed anything and may move
// j.UpdatedAt too. The book is read, changed and written back on condition
// that the job did not change meanwhile; a change bumps rev.
func (s *Store) editBook(ctx context.Context, id string, fn func(j *spoolv1.Job) bool) (*spoolv1.Job, error) {
	for range raceRounds {
		r, err := s.getJob(ctx, id)
		if err != nil {
			return nil, err
		}
		j := r.view()
		if !fn(j) {
			return j, nil
		}
		book, err := bookValue(j)
		if err != nil {
			return nil, err
		}
		e := newExpr()
		u := newUpdate(e).Set(aBook, book).BumpRev()
		if at := j.GetUpdatedAt().AsTime(); !at.Equal(r.updatedAt) {
			u.Set(aUpdatedAt, num(at.UnixMicro()))
		}
		done, ok, err := s.updateJob(ctx, id, u, and(isJob(e), e.eq(aRev, num(r.rev))))
		if err != nil {
			return nil, err
		}
		if ok {
			return done.view(), nil
		}
	}
	return nil, errBusy(id)
}
