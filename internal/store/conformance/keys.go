package conformance

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/spool-run/spool"
	spoolv1 "github.com/spool-run/spool/gen/spool/v1"
	"github.com/spool-run/spool/internal/store"
	"github.com/spool-run/spool/internal/store/storekit"
)

func newKey(name string, role spoolv1.KeyRole, queues ...string) store.KeyRecord {
	return store.KeyRecord{
		Key:  &spoolv1.Key{Name: name, Role: role, Queues: queues, CreatedAt: timestamppb.New(storekit.Now())},
		Hash: strings.Repeat("0", 40) + name, // stands for the secret's hash
	}
}

// testKeys: keys are created once per name, found by hash, listed, used and
// revoked; a revoked key is still found (and seen to be revoked).
func testKeys(t *testing.T, b Backend) {
	s := open(t, b)
	ctx := context.Background()
	q := newQueue() // a name no other test uses
	admin, work := newKey(q+"-admin", spoolv1.KeyRole_KEY_ROLE_ADMIN), newKey(q+"-work", spoolv1.KeyRole_KEY_ROLE_WORKER, "builds", "deploys")
	for _, k := range []store.KeyRecord{admin, work} {
		if err := s.CreateKey(ctx, k); err != nil {
			t.Fatal(err)
		}
	}
	dup := newKey(q+"-admin", spoolv1.KeyRole_KEY_ROLE_READ)
	dup.Hash += "x"
	wantErr(t, s.CreateKey(ctx, dup), spool.ErrAlreadyExists, "a second key with a name in use")

	got, err := s.KeyByHash(ctx, work.Hash)
	if err != nil || got.Key.GetName() != work.Key.GetName() || got.Key.GetRole() != spoolv1.KeyRole_KEY_ROLE_WORKER ||
		strings.Join(got.Key.GetQueues(), ",") != "builds,deploys" || got.Key.GetRevokedAt() != nil {
		t.Fatalf("KeyByHash: %v %v", got.Key, err)
	}
	_, err = s.KeyByHash(ctx, "no-such-hash")
	wantErr(t, err, spool.ErrNotFound, "an unknown hash")

	used := storekit.Now()
	if err := s.TouchKey(ctx, work.Hash, used); err != nil {
		t.Fatal(err)
	}
	if got, _ := s.KeyByHash(ctx, work.Hash); !got.Key.GetLastUsedAt().AsTime().Equal(used) {
		t.Fatalf("last use %v, want %v", got.Key.GetLastUsedAt(), used)
	}

	at := storekit.Now()
	k, err := s.RevokeKey(ctx, work.Key.GetName(), at)
	if err != nil || !k.GetRevokedAt().AsTime().Equal(at) {
		t.Fatalf("RevokeKey: %v %v", k, err)
	}
	if k, _ := s.RevokeKey(ctx, work.Key.GetName(), at.Add(time.Hour)); !k.GetRevokedAt().AsTime().Equal(at) {
		t.Fatalf("revoking again moved the revocation time to %v", k.GetRevokedAt())
	}
	if got, _ := s.KeyByHash(ctx, work.Hash); got.Key.GetRevokedAt() == nil {
		t.Fatal("a revoked key is not seen as revoked")
	}
	_, err = s.RevokeKey(ctx, q+"-nobody", at)
	wantErr(t, err, spool.ErrNotFound, "revoking an unknown key")

	keys, err := s.ListKeys(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var mine []string
	for _, k := range keys {
		if strings.HasPrefix(k.GetName(), q+"-") {
			mine = append(mine, k.GetName())
		}
	}
	if strings.Join(mine, ",") != admin.Key.GetName()+","+work.Key.GetName() {
		t.Fatalf("ListKeys: %v", mine)
	}
}

// testKeyNameRace: of many creators of one name at once, exactly one wins.
func testKeyNameRace(t *testing.T, b Backend) {
	s := open(t, b)
	name := newQueue() + "-racer"
	var won atomic.Int32
	var wg sync.WaitGroup
	for i := range 20 {
		wg.Go(func() {
			k := newKey(name, spoolv1.KeyRole_KEY_ROLE_READ)
			k.Hash += strings.Repeat("x", i+1)
			if err := s.CreateKey(context.Background(), k); err == nil {
				won.Add(1)
			} else if !isKind(err, spool.ErrAlreadyExists) {
				t.Errorf("CreateKey: %v", err)
			}
		})
	}
	wg.Wait()
	if won.Load() != 1 {
		t.Fatalf("%d creators of one key name succeeded", won.Load())
	}
}

func isKind(err, kind error) bool { return errors.Is(err, kind) }
