package store

import (
	"context"
	"time"

	spoolv1 "github.com/spool-run/spool/gen/spool/v1"
)

// KeyStore keeps the API keys. Only a hash of each key's secret is stored;
// the service core checks every call's key against what it read from here
// less than a second ago, so a revoked key stops working within a second on
// every server sharing the store.
type KeyStore interface {
	// CreateKey stores a new key. A name in use is spool.ErrAlreadyExists.
	CreateKey(ctx context.Context, k KeyRecord) error
	// KeyByHash returns the key whose secret hashes to hash, revoked or not,
	// or spool.ErrNotFound.
	KeyByHash(ctx context.Context, hash string) (KeyRecord, error)
	// ListKeys returns every key, oldest first.
	ListKeys(ctx context.Context) ([]*spoolv1.Key, error)
	// RevokeKey marks the named key revoked at at (a key revoked before
	// keeps its first time), or spool.ErrNotFound.
	RevokeKey(ctx context.Context, name string, at time.Time) (*spoolv1.Key, error)
	// TouchKey records that the key with this hash was used at at.
	TouchKey(ctx context.Context, hash string, at time.Time) error
}

// KeyRecord is an API key as stored: its public part and the hash of its
// secret.
type KeyRecord struct {
	Key  *spoolv1.Key
	Hash string
}
