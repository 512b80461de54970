package service

import (
	"context"
	"sync"

	"golang.org/x/sync/semaphore"

	"github.com/spool-run/spool"
	"github.com/spool-run/spool/internal/apierr"
)

// A Firehose delivery of a few MiB may decode to many times that, and
// each is bounded on its own (ingest.max_decoded_bytes); so that many of
// them at once cannot add up to more memory than the server means to give
// them, what they decode to is also bounded server-wide
// (ingest.max_decoding_bytes). A delivery's records are measured first,
// without being held, and the delivery holds what they decode to from
// before it decodes them until it is stored; one that does not fit waits
// for others to finish. A delivery never waits while holding any, so two
// cannot wait for each other.

// decodeBudget is what the deliveries being decoded may hold at once.
type decodeBudget struct {
	once sync.Once
	sem  *semaphore.Weighted
	size int64
}

// holdDecoding holds n bytes of the budget, waiting for them as long as
// ctx lasts, and returns the function that gives them back.
func (s *Service) holdDecoding(ctx context.Context, n int64) (release func(), err error) {
	b := &s.decoding
	b.once.Do(func() {
		b.size = s.cfg.Ingest.MaxDecodingBytes
		b.sem = semaphore.NewWeighted(b.size)
	})
	// The configuration makes the budget hold the largest delivery;
	// should it not, a delivery takes it all rather than wait forever.
	n = min(n, b.size)
	if n <= 0 {
		return func() {}, nil
	}
	if err := b.sem.Acquire(ctx, n); err != nil {
		return nil, apierr.Errorf(spool.ErrUnavailable,
			"the delivery waited for other deliveries being decoded (ingest.max_decoding_bytes) until the request ended; send it again: %w", err)
	}
	return func() { b.sem.Release(n) }, nil
}
