package service

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/spool-run/spool"
	spoolv1 "github.com/spool-run/spool/gen/spool/v1"
	"github.com/spool-run/spool/internal/config"
	"github.com/spool-run/spool/internal/store"
	"github.com/spool-run/spool/internal/store/backends/memstore"
	"github.com/spool-run/spool/internal/token"
)

// countingStore counts the lookups of keys.
type countingStore struct {
	*memstore.Store
	lookups atomic.Int64
}

func (c *countingStore) KeyByHash(ctx context.Context, hash string) (store.KeyRecord, error) {
	c.lookups.Add(1)
	return c.Store.KeyByHash(ctx, hash)
}

// keyed is a core with auth on over a store that counts key lookups, and a
// read key's credentials.
func keyed(t *testing.T) (*Service, *countingStore, context.Context) {
	t.Helper()
	signer, err := token.NewSigner(make([]byte, 32))
	if err != nil {
		t.Fatal(err)
	}
	st := &countingStore{Store: memstore.New()}
	s := New(Options{Store: st, Config: config.Default(), Signer: signer})
	secret := NewSecret()
	key := &spoolv1.Key{Name: "reader", Role: spoolv1.KeyRole_KEY_ROLE_READ, CreatedAt: timestamppb.Now()}
	if err := st.CreateKey(context.Background(), store.KeyRecord{Key: key, Hash: HashKey(secret)}); err != nil {
		t.Fatal(err)
	}
	return s, st, WithCredentials(context.Background(), Credentials{Host: "localhost", Key: secret})
}

// The caller the door finds serves the operation: the key is looked up
// once per request, not once at the door and again in the core.
func TestAuthenticateOnceARequest(t *testing.T) {
	s, st, ctx := keyed(t)
	in, err := s.Authenticate(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if _, err := s.ListJobs(in, &spoolv1.ListJobsRequest{}); err != nil {
			t.Fatal(err)
		}
	}
	if n := st.lookups.Load(); n != 1 {
		t.Errorf("the door and three calls looked the key up %d times, want once", n)
	}
	// Without the door, a call finds the key this server read a moment
	// ago; once that is older than keyFresh, it reads it again.
	if _, err := s.ListJobs(ctx, &spoolv1.ListJobsRequest{}); err != nil {
		t.Fatal(err)
	}
	if n := st.lookups.Load(); n != 1 {
		t.Errorf("a call without the door, the key just read: %d lookups in all, want 1", n)
	}
	ageKeys(s, keyFresh)
	if _, err := s.ListJobs(ctx, &spoolv1.ListJobsRequest{}); err != nil {
		t.Fatal(err)
	}
	if n := st.lookups.Load(); n != 2 {
		t.Errorf("a call without the door, the key read %v ago: %d lookups in all, want 2", keyFresh, n)
	}
	// A permission the role lacks is still refused, by the core.
	if _, err := s.CancelJob(in, &spoolv1.CancelJobRequest{JobId: "x"}); !errors.Is(err, spool.ErrPermissionDenied) {
		t.Errorf("a read key cancelling: %v", err)
	}
}

// What the door found is not taken for other credentials put in the
// context later, nor once it is older than a stream rechecks its key: a
// key revoked since is then refused.
func TestAuthenticateFindingKeptBriefly(t *testing.T) {
	s, st, ctx := keyed(t)
	in, err := s.Authenticate(ctx)
	if err != nil {
		t.Fatal(err)
	}
	other := WithCredentials(in, Credentials{Host: "localhost", Key: NewSecret()})
	if _, err := s.ListJobs(other, &spoolv1.ListJobsRequest{}); !errors.Is(err, spool.ErrUnauthenticated) {
		t.Errorf("other credentials after the door: %v", err)
	}
	if _, err := st.RevokeKey(context.Background(), "reader", time.Now()); err != nil {
		t.Fatal(err)
	}
	if _, err := s.ListJobs(in, &spoolv1.ListJobsRequest{}); err != nil {
		t.Errorf("within the request's first moments, the door's finding serves: %v", err)
	}
	a := in.Value(authenticatedKey{}).(authenticated)
	a.at = a.at.Add(-recheckEvery)
	old := context.WithValue(in, authenticatedKey{}, a)
	ageKeys(s, keyFresh)
	if _, err := s.ListJobs(old, &spoolv1.ListJobsRequest{}); !errors.Is(err, spool.ErrUnauthenticated) {
		t.Errorf("a revoked key, the door's finding %v old: %v", recheckEvery, err)
	}
}

// The door refuses what the core would: no key, an unknown key, a foreign
// Host.
func TestAuthenticateRefuses(t *testing.T) {
	s, _, ctx := keyed(t)
	for name, cr := range map[string]Credentials{
		"no key":       {Host: "localhost"},
		"unknown key":  {Host: "localhost", Key: NewSecret()},
		"foreign Host": {Host: "attacker.example", Key: credentialsFrom(ctx).Key},
	} {
		if _, err := s.Authenticate(WithCredentials(context.Background(), cr)); err == nil {
			t.Errorf("%s: let in", name)
		}
	}
}
