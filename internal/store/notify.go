package store

import (
	"context"
	"time"

	spoolv1 "github.com/spool-run/spool/gen/spool/v1"
)

// NotifyStore is the outbox of the webhooks that tell of jobs' ends.
// Every backend implements it.
//
// When a job with notify URLs becomes final, by whatever path (a
// completion, a cancel, a lease that ran out, a job cancelled because one
// it ran after failed), the store sets its notify_due to that moment in
// the same write (storekit.Outcome.Apply and storekit.CancelQueued do it
// for stores that write the job they computed). A server's notifier then
// claims due jobs, POSTs to their URLs, and records each try.
type NotifyStore interface {
	// ClaimNotifications returns up to max jobs whose notify_due is not
	// after now, oldest due first, and moves their notify_due to now+hold
	// in the same write: a call by another server, or a later one, does
	// not return them again until hold has passed (a notifier that died
	// mid-delivery is thus replaced). The jobs returned carry the new
	// notify_due. Backends find due jobs through an index, not a scan.
	ClaimNotifications(ctx context.Context, now time.Time, hold time.Duration, max int) ([]*spoolv1.Job, error)
	// RecordDeliveries adds ds to the job's deliveries (the newest
	// MaxDeliveries kept) and sets its notify_due to next (zero: unset,
	// nothing more is owed). A job that no longer exists is
	// spool.ErrNotFound.
	RecordDeliveries(ctx context.Context, jobID string, ds []*spoolv1.Delivery, next time.Time) error
}
