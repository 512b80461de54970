package service

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/spool-run/spool"
	spoolv1 "github.com/spool-run/spool/gen/spool/v1"
	"github.com/spool-run/spool/internal/store"
)

// ageKeys makes every key this server keeps d older, as if read d ago.
func ageKeys(s *Service, d time.Duration) {
	c := &s.keyCache
	c.mu.Lock()
	defer c.mu.Unlock()
	for h, k := range c.keys {
		k.read = k.read.Add(-d)
		c.keys[h] = k
	}
}

// Many calls with one key at once read it from the store once.
func TestKeyReadOnceForCallsTogether(t *testing.T) {
	s, st, ctx := keyed(t)
	var wg sync.WaitGroup
	errs := make(chan error, 50)
	for range 50 {
		wg.Go(func() {
			if _, err := s.ListJobs(ctx, &spoolv1.ListJobsRequest{}); err != nil {
				errs <- err
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	// 50 calls within keyFresh of each other: one read, or two if the
	// machine stalled past keyFresh between them.
	if n := st.lookups.Load(); n < 1 || n > 2 {
		t.Errorf("50 calls read the key %d times, want once", n)
	}
}

// A key revoked in the shared store by another server is refused here
// within a second; one revoked through this server, at once.
func TestRevokedKeyRefused(t *testing.T) {
	s, st, ctx := keyed(t)
	if _, err := s.ListJobs(ctx, &spoolv1.ListJobsRequest{}); err != nil {
		t.Fatal(err)
	}
	if _, err := st.RevokeKey(context.Background(), "reader", time.Now()); err != nil {
		t.Fatal(err)
	}
	revoked := time.Now()
	for {
		began := time.Now()
		_, err := s.ListJobs(ctx, &spoolv1.ListJobsRequest{})
		if errors.Is(err, spool.ErrUnauthenticated) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if began.Sub(revoked) > time.Second {
			t.Fatalf("the key still worked %v after another server revoked it", began.Sub(revoked))
		}
	}

	admin := NewSecret()
	key := &spoolv1.Key{Name: "admin", Role: spoolv1.KeyRole_KEY_ROLE_ADMIN, CreatedAt: timestamppb.Now()}
	if err := st.CreateKey(context.Background(), store.KeyRecord{Key: key, Hash: HashKey(admin)}); err != nil {
		t.Fatal(err)
	}
	adminCtx := WithCredentials(context.Background(), Credentials{Host: "localhost", Key: admin})
	if _, err := s.ListKeys(adminCtx, &spoolv1.ListKeysRequest{}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.RevokeKey(adminCtx, &spoolv1.RevokeKeyRequest{Name: "admin"}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.ListKeys(adminCtx, &spoolv1.ListKeysRequest{}); !errors.Is(err, spool.ErrUnauthenticated) {
		t.Errorf("a key revoked through this server, its next call: %v, want unauthenticated", err)
	}
}

// An unknown key is not remembered as unknown: made in the shared store
// by another server, it works here on its next call.
func TestNewKeyWorksAtOnce(t *testing.T) {
	s, st, _ := keyed(t)
	secret := NewSecret()
	ctx := WithCredentials(context.Background(), Credentials{Host: "localhost", Key: secret})
	if _, err := s.ListJobs(ctx, &spoolv1.ListJobsRequest{}); !errors.Is(err, spool.ErrUnauthenticated) {
		t.Fatalf("an unknown key: %v", err)
	}
	key := &spoolv1.Key{Name: "late", Role: spoolv1.KeyRole_KEY_ROLE_READ, CreatedAt: timestamppb.Now()}
	if err := st.CreateKey(context.Background(), store.KeyRecord{Key: key, Hash: HashKey(secret)}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.ListJobs(ctx, &spoolv1.ListJobsRequest{}); err != nil {
		t.Errorf("the key once made: %v", err)
	}
}
