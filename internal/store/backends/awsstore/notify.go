package awsstore

import (
	"context"
	"errors"
	"time"

	"golang.org/x/sync/errgroup"
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
// claiming at once, one wins each job. Jobs are claimed up to
// promotersAtOnce side by side, never more than are still wanted.
func (s *Store) ClaimNotifications(ctx context.Context, now time.Time, hold time.Duration, limit int) ([]*spoolv1.Job, error) {
	if limit <= 0 {
		return nil, nil
	}
	// Twice the limit: the index lags the table, so some entries are of
	// jobs claimed a moment ago.
	ids, err := s.indexed(ctx, notifyPart, now, 2*limit)
	if err != nil {
		return nil, err
	}
	var out []*spoolv1.Job
	for len(ids) > 0 && len(out) < limit {
		batch := ids[:min(len(ids), limit-len(out))]
		ids = ids[len(batch):]
		got := make([]*spoolv1.Job, len(batch))
		g, gctx := errgroup.WithContext(ctx)
		g.SetLimit(promotersAtOnce)
		for i, id := range batch {
			g.Go(func() (err error) {
				got[i], err = s.claimNotification(gctx, id, now, hold)
				return err
			})
		}
		if err := g.Wait(); err != nil {
			return nil, err
		}
		for _, j := range got {
			if j != nil {
				out = append(out, j)
			}
		}
	}
	return out, nil
}

// claimNotification claims one job's webhooks if they are due at now
// (nil: not due, gone, or claimed by another).
func (s *Store) claimNotification(ctx context.Context, id string, now time.Time, hold time.Duration) (*spoolv1.Job, error) {
	r, err := s.getJob(ctx, id)
	if errors.Is(err, spool.ErrNotFound) {
		return nil, nil // deleted since the index saw it
	}
	if err != nil {
		return nil, err
	}
	j := r.view()
	if j.GetNotifyDue() == nil || j.GetNotifyDue().AsTime().After(now) {
		return nil, nil
	}
	j.NotifyDue = timestamppb.New(now.Add(hold))
	done, ok, err := s.writeNotify(ctx, r, j, false)
	if err != nil || !ok {
		return nil, err
	}
	return done.view(), nil
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
