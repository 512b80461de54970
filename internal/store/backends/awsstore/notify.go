package awsstore

import (
	"context"
	"errors"
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/spool-run/spool"
	spoolv1 "github.com/spool-run/spool/gen/spool/v1"
	"github.com/spool-run/spool/internal/convert"
	"github.com/spool-run/spool/internal/store/storekit"
)

// The webhook outbox. A final job that owes webhooks sits in the leases
// index in notifyPart, lease_expires its notify_due (see placeOf): every
// write that makes a job final goes through settle, which puts it there
// when Outcome.Apply set notify_due.

// ClaimNotifications implements store.NotifyStore: one query of the due
// entries, oldest due first, then per job a read and an update moving
// notify_due (and its index entry) to now+hold, on condition that the
// job did not change and its entry is where it was read: of two servers
// claiming at once, one wins each job.
func (s *Store) ClaimNotifications(ctx context.Context, now time.Time, hold time.Duration, limit int) ([]*spoolv1.Job, error) {
	if limit <= 0 {
		return nil, nil
	}
	ids, err := s.indexed(ctx, notifyPart, now, 0)
	if err != nil {
		return nil, err
	}
	var out []*spoolv1.Job
	for _, id := range ids {
		if len(out) == limit {
			break
		}
		r, err := s.getJob(ctx, id)
		if err != nil {
			if errors.Is(err, spool.ErrNotFound) {
				continue // deleted since the index saw it
			}
			return nil, err
		}
		j := r.view()
		if j.GetNotifyDue() == nil || j.GetNotifyDue().AsTime().After(now) {
			continue
		}
		j.NotifyDue = timestamppb.New(now.Add(hold))
		done, ok, err := s.writeNotify(ctx, r, j, false)
		if err != nil {
			return nil, err
		}
		if ok {
			out = append(out, done.view())
		}
	}
	return out, nil
}

// RecordDeliveries implements store.NotifyStore.
func (s *Store) RecordDeliveries(ctx context.Context, jobID string, ds []*spoolv1.Delivery, next time.Time) error {
	for range raceRounds {
		r, err := s.getJob(ctx, jobID)
		if err != nil {
			return err
		}
		j := r.view()
		storekit.AddDeliveries(j, ds, next)
		_, ok, err := s.writeNotify(ctx, r, j, true)
		if err != nil || ok {
			return err
		}
	}
	return errBusy(jobID)
}

// writeNotify writes j's book (its deliveries and notify_due) and its
// place in the index, on condition that the job is as r was read. A
// claim bumps no rev (nothing a reader shows changed); recorded
// deliveries do.
func (s *Store) writeNotify(ctx context.Context, r *jobRec, j *spoolv1.Job, bump bool) (*jobRec, bool, error) {
	book, err := bookValue(j)
	if err != nil {
		return nil, false, err
	}
	e := newExpr()
	u := newUpdate(e).Set(aBook, book)
	if bump {
		u.BumpRev()
	}
	cond := and(isJob(e), e.eq(aRev, num(r.rev)), e.eq(aState, num(int32(r.state))))
	if !convert.State(r.state).IsFinal() {
		// A job owes webhooks once final; until then its entry is its
		// lease's or its schedule's.
		return s.updateJob(ctx, r.id(), u, cond)
	}
	place(u, j)
	// A claim moves no rev: the entry's time tells claims apart.
	if r.book.GetNotifyDue() != nil {
		cond = and(cond, e.eq(aLeaseExpires, num(r.book.GetNotifyDue().AsTime().UnixMicro())))
	} else {
		cond = and(cond, "attribute_not_exists("+e.n(aLeaseExpires)+")")
	}
	return s.updateJob(ctx, r.id(), u, cond)
}
