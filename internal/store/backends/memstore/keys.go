package memstore

import (
	"context"
	"slices"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/spool-run/spool"
	spoolv1 "github.com/spool-run/spool/gen/spool/v1"
	"github.com/spool-run/spool/internal/apierr"
	"github.com/spool-run/spool/internal/store"
)

// CreateKey implements store.KeyStore.
func (s *Store) CreateKey(_ context.Context, k store.KeyRecord) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, have := range s.keys {
		if have.Key.GetName() == k.Key.GetName() {
			return apierr.Errorf(spool.ErrAlreadyExists, "a key named %q exists already", k.Key.GetName())
		}
	}
	s.keys = append(s.keys, store.KeyRecord{Key: proto.CloneOf(k.Key), Hash: k.Hash})
	return nil
}

// KeyByHash implements store.KeyStore.
func (s *Store) KeyByHash(_ context.Context, hash string) (store.KeyRecord, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, k := range s.keys {
		if k.Hash == hash {
			return store.KeyRecord{Key: proto.CloneOf(k.Key), Hash: k.Hash}, nil
		}
	}
	return store.KeyRecord{}, apierr.Errorf(spool.ErrNotFound, "no such key")
}

// ListKeys implements store.KeyStore.
func (s *Store) ListKeys(context.Context) ([]*spoolv1.Key, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]*spoolv1.Key, len(s.keys))
	for i, k := range s.keys {
		out[i] = proto.CloneOf(k.Key)
	}
	return out, nil
}

// RevokeKey implements store.KeyStore.
func (s *Store) RevokeKey(_ context.Context, name string, at time.Time) (*spoolv1.Key, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	i := slices.IndexFunc(s.keys, func(k store.KeyRecord) bool { return k.Key.GetName() == name })
	if i < 0 {
		return nil, apierr.Errorf(spool.ErrNotFound, "no key named %q", name)
	}
	if s.keys[i].Key.RevokedAt == nil {
		s.keys[i].Key.RevokedAt = timestamppb.New(at)
	}
	return proto.CloneOf(s.keys[i].Key), nil
}

// TouchKey implements store.KeyStore.
func (s *Store) TouchKey(_ context.Context, hash string, at time.Time) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, k := range s.keys {
		if k.Hash == hash {
			k.Key.LastUsedAt = timestamppb.New(at)
		}
	}
	return nil
}
