package store

import (
	"context"
	"time"
)

// SpentStore remembers ids that were used up before their time ran out:
// a WebSocket ticket, which opens one stream once, and a session that was
// signed out of before it expired. The tokens themselves are signed and
// carry their expiry, so any server can check them without the store; what
// only the store can say is that one was used or ended already, on any
// server sharing it. An id needs remembering only until its token
// expires: after that the token is refused anyway, and a backend may
// forget the id (a sweep or a TTL), so the table stays as small as the
// number of tokens spent in the last hours.
type SpentStore interface {
	// SpendOnce records id as spent until until. first is true for the
	// call that recorded it, false when id was spent already and its until
	// has not passed, also when called concurrently (a conditional write,
	// not a read-then-write). An id whose until has passed counts as never
	// spent.
	SpendOnce(ctx context.Context, id string, until time.Time) (first bool, err error)
	// Spent reports whether id is spent and its until has not passed.
	Spent(ctx context.Context, id string) (bool, error)
}
