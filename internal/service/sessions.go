package service

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"time"

	"github.com/spool-run/spool"
	"github.com/spool-run/spool/internal/apierr"
	"github.com/spool-run/spool/internal/token"
)

// Sessions and tickets are signed, so any server checks them without the
// store; what only the store knows is whether one was used up already: a
// session signed out of, a ticket that opened its stream. Both have an id
// of their own, which the store records as spent (store.SpentStore) until
// the token expires anyway.

// spentMargin keeps a spent id a little past its token's expiry, so that a
// server whose clock runs behind the others' still finds it.
const spentMargin = 5 * time.Minute

// spentID is the store's id of a session's or a ticket's id: the two kinds
// never share one.
func spentID(kind, id string) string { return kind + ":" + id }

// newTokenID returns a random id for a session or a ticket: 128 bits.
func newTokenID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return base64.RawURLEncoding.EncodeToString(b[:])
}

// errLoginEnded answers a session that is not, or no longer, valid.
func errLoginEnded() error {
	return apierr.Errorf(spool.ErrUnauthenticated, "your login has ended; log in again with your API key")
}

// liveSession checks a session cookie: signed by this server's key, not
// expired, not signed out of (one store read).
func (s *Service) liveSession(ctx context.Context, cookie string) (token.Session, error) {
	ss, err := s.signer.VerifySession(cookie)
	if err != nil || time.Now().Unix() > ss.Expires {
		return token.Session{}, errLoginEnded()
	}
	ended, err := s.store.Spent(ctx, spentID("session", ss.ID))
	if err != nil {
		return token.Session{}, s.fail(ctx, "authenticate", err)
	}
	if ended {
		return token.Session{}, errLoginEnded()
	}
	return ss, nil
}

// endSession records a session as ended on every server sharing the store,
// until it would have expired.
func (s *Service) endSession(ctx context.Context, ss token.Session) error {
	_, err := s.store.SpendOnce(ctx, spentID("session", ss.ID), time.Unix(ss.Expires, 0).Add(spentMargin))
	return err
}

// errTicketUsed answers a ticket that cannot open a stream (any more).
func errTicketUsed(why string) error {
	return apierr.Errorf(spool.ErrUnauthenticated, "this WebSocket ticket %s: ask for a new one (POST /api/v1/session/ticket?job_id=…) just before opening the stream", why)
}

// ticketOf checks a ticket: signed by this server's key and, with redeem,
// not expired and spent now, by this use, on every server sharing the
// store. Without redeem, the ticket was redeemed when its stream opened,
// and only its key is left to check again.
func (s *Service) ticketOf(ctx context.Context, tok string, redeem bool) (token.Ticket, error) {
	tk, err := s.signer.VerifyTicket(tok)
	if err != nil {
		return token.Ticket{}, errTicketUsed("is not one this server made")
	}
	if !redeem {
		return tk, nil
	}
	if time.Now().Unix() > tk.Expires {
		return token.Ticket{}, errTicketUsed("has expired")
	}
	first, err := s.store.SpendOnce(ctx, spentID("ticket", tk.ID), time.Unix(tk.Expires, 0).Add(spentMargin))
	if err != nil {
		return token.Ticket{}, s.fail(ctx, "authenticate", err)
	}
	if !first {
		return token.Ticket{}, errTicketUsed("was used already")
	}
	return tk, nil
}

// ticketStreamKey marks a context that opens a job's log stream.
type ticketStreamKey struct{}

// forLogStream returns ctx marked as opening the log stream of jobID: what
// a ticket for that job may do.
func forLogStream(ctx context.Context, jobID string) context.Context {
	return context.WithValue(ctx, ticketStreamKey{}, jobID)
}

// ticketAllows refuses whatever a ticket was not made for: it opens the log
// stream of its job, to read, and nothing else.
func (c Caller) ticketAllows(ctx context.Context, perm Permission) error {
	if c.ticketJob == "" {
		return nil
	}
	if stream, _ := ctx.Value(ticketStreamKey{}).(string); perm == PermRead && stream == c.ticketJob {
		return nil
	}
	return apierr.Errorf(spool.ErrUnauthenticated,
		"a WebSocket ticket opens the log stream of job %s, once, and nothing else: other calls need the API key (Authorization: Bearer KEY) or a login", c.ticketJob)
}

// stillValid checks again, against the store, the credentials a long call
// (a log stream) was let in with: the key is not revoked since, the
// session not signed out of or expired. A ticket is not spent again: it
// was when the stream opened. A key's role and queues never change, so
// what it was allowed then it is allowed now.
func (s *Service) stillValid(ctx context.Context) error {
	_, err := s.identify(ctx, credentialsFrom(ctx), false)
	return err
}
