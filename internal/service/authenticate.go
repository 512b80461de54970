package service

import (
	"context"
	"time"
)

// A request's credentials are checked once, at the server's door, before
// any of its body is read: a caller without a valid key or session then
// costs the server a header's worth of work, however large the body it
// sends. The caller found there rides in the request's context, and the
// operation's authorize takes it from there instead of looking the key up
// in the store a second time.

// authenticatedKey carries the door's finding in a context.
type authenticatedKey struct{}

// authenticated is the caller found for a request's credentials, and when.
type authenticated struct {
	cr     Credentials
	caller Caller
	at     time.Time
}

// Authenticate checks the Host and the credentials in ctx (WithCredentials)
// and returns ctx carrying the caller they stand for. It does not decide
// what the caller may do: each operation still asks authorize for its
// permission.
func (s *Service) Authenticate(ctx context.Context) (context.Context, error) {
	cr := credentialsFrom(ctx)
	if err := s.CheckHost(cr.Host); err != nil {
		return ctx, err
	}
	c, err := s.authenticate(ctx, cr)
	if err != nil {
		return ctx, err
	}
	return context.WithValue(ctx, authenticatedKey{}, authenticated{cr: cr, caller: c, at: time.Now()}), nil
}

// callerOf returns who cr stands for: the caller the door found, when it
// was found for these very credentials less than recheckEvery ago, or
// else the store's answer now. A request that lasts (a follow, a long
// poll) thus still learns within recheckEvery that its key was revoked,
// and credentials swapped inside a request (a login's key) are looked up.
// A ticket the door let in was spent there: looking again only checks its
// key, or the request would be refused for using it twice.
func (s *Service) callerOf(ctx context.Context, cr Credentials) (Caller, error) {
	a, ok := ctx.Value(authenticatedKey{}).(authenticated)
	if !ok || a.cr != cr {
		return s.authenticate(ctx, cr)
	}
	if time.Since(a.at) < recheckEvery {
		return a.caller, nil
	}
	return s.identify(ctx, cr, false)
}
