package awsstore

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/spool-run/spool"
	spoolv1 "github.com/spool-run/spool/gen/spool/v1"
	"github.com/spool-run/spool/internal/apierr"
	"github.com/spool-run/spool/internal/store"
)

// API keys live in the jobs table, as items of their own kind: a key item
// under "key#" + the secret's hash (what every call looks up), listed
// through the by-time index in a partition of their own, and a name item
// under "keyname#" + the name, written first and only if absent, so two
// keys never share a name.
const (
	kindKey     = "key"
	kindKeyName = "keyname"
	keysPart    = "keys"

	aKey = "key" // B: the key's public part (spoolv1.Key)

	// orphanNameAfter: a name item whose key item is missing this long
	// after it was written (its creator died in between) may be taken.
	orphanNameAfter = time.Minute
)

func keyItemKey(hash string) item { return item{aJobID: str("key#" + hash)} }
func keyNameKey(name string) item { return item{aJobID: str("keyname#" + name)} }
func isKeyItem(it item) bool      { return getStr(it, aKind) == kindKey }
func keyTarget(it item) string    { return getStr(it, aTarget) }
func keyMadeAt(it item) time.Time { n, _ := getInt(it, aMadeAt); return time.UnixMicro(n) }
func keyOf(it item) (*spoolv1.Key, error) {
	k := &spoolv1.Key{}
	if err := proto.Unmarshal(getBin(it, aKey), k); err != nil {
		return nil, fmt.Errorf("stored key is corrupt: %w", err)
	}
	return k, nil
}

// CreateKey implements store.KeyStore.
func (s *Store) CreateKey(ctx context.Context, k store.KeyRecord) error {
	name := keyNameKey(k.Key.GetName())
	name[aKind], name[aTarget], name[aMadeAt] = str(kindKeyName), str(k.Hash), num(time.Now().UnixMicro())
	written, err := s.putIfAbsent(ctx, name)
	if err != nil {
		return awsErr(err, "create key %s", k.Key.GetName())
	}
	if !written {
		if taken, err := s.nameTaken(ctx, k.Key.GetName()); err != nil || taken {
			if err == nil {
				err = apierr.Errorf(spool.ErrAlreadyExists, "a key named %q exists already", k.Key.GetName())
			}
			return err
		}
		if err := s.putItem(ctx, name); err != nil {
			return awsErr(err, "create key %s", k.Key.GetName())
		}
	}
	b, err := marshal(k.Key)
	if err != nil {
		return err
	}
	it := keyItemKey(k.Hash)
	it[aKind], it[aKey] = str(kindKey), bin(b)
	it[aListPart], it[aCreatedKey] = str(keysPart), str(createdKey(k.Key.GetCreatedAt().AsTime(), k.Key.GetName()))
	if err := s.putItem(ctx, it); err != nil {
		return awsErr(err, "create key %s", k.Key.GetName())
	}
	return nil
}

// nameTaken reports whether a name item belongs to a key that exists (or
// is too young to tell): only an orphan's name may be taken over.
func (s *Store) nameTaken(ctx context.Context, name string) (bool, error) {
	n, err := s.getItem(ctx, keyNameKey(name))
	if err != nil || n == nil {
		return n != nil, err
	}
	if time.Since(keyMadeAt(n)) < orphanNameAfter {
		return true, nil
	}
	k, err := s.getItem(ctx, keyItemKey(keyTarget(n)))
	return k != nil, err
}

// KeyByHash implements store.KeyStore.
func (s *Store) KeyByHash(ctx context.Context, hash string) (store.KeyRecord, error) {
	it, err := s.getItem(ctx, keyItemKey(hash))
	if err != nil {
		return store.KeyRecord{}, err
	}
	if it == nil || !isKeyItem(it) {
		return store.KeyRecord{}, apierr.Errorf(spool.ErrNotFound, "no such key")
	}
	k, err := keyOf(it)
	if err != nil {
		return store.KeyRecord{}, err
	}
	return store.KeyRecord{Key: k, Hash: hash}, nil
}

// ListKeys implements store.KeyStore.
func (s *Store) ListKeys(ctx context.Context) ([]*spoolv1.Key, error) {
	e := newExpr()
	in := &dynamodb.QueryInput{
		TableName:                 aws.String(s.cfg.JobsTable),
		IndexName:                 aws.String(indexByTime),
		KeyConditionExpression:    aws.String(e.eq(aListPart, str(keysPart))),
		ProjectionExpression:      aws.String(e.n(aJobID)),
		ExpressionAttributeNames:  e.names,
		ExpressionAttributeValues: e.values,
	}
	var ids []item
	for p := dynamodb.NewQueryPaginator(s.clients.db, in); p.HasMorePages(); {
		page, err := p.NextPage(ctx)
		if err != nil {
			return nil, awsErr(err, "list keys")
		}
		for _, it := range page.Items {
			ids = append(ids, item{aJobID: it[aJobID]})
		}
	}
	items, err := s.batchGet(ctx, s.cfg.JobsTable, ids, consistentAll())
	if err != nil {
		return nil, err
	}
	var out []*spoolv1.Key
	for _, it := range items {
		if !isKeyItem(it) {
			continue
		}
		k, err := keyOf(it)
		if err != nil {
			return nil, err
		}
		out = append(out, k)
	}
	slices.SortFunc(out, func(a, b *spoolv1.Key) int { return a.GetCreatedAt().AsTime().Compare(b.GetCreatedAt().AsTime()) })
	return out, nil
}

// RevokeKey implements store.KeyStore.
func (s *Store) RevokeKey(ctx context.Context, name string, at time.Time) (*spoolv1.Key, error) {
	n, err := s.getItem(ctx, keyNameKey(name))
	if err != nil {
		return nil, err
	}
	if n == nil {
		return nil, apierr.Errorf(spool.ErrNotFound, "no key named %q", name)
	}
	return s.updateKey(ctx, keyTarget(n), func(k *spoolv1.Key) {
		if k.RevokedAt == nil {
			k.RevokedAt = timestamppb.New(at)
		}
	})
}

// TouchKey implements store.KeyStore.
func (s *Store) TouchKey(ctx context.Context, hash string, at time.Time) error {
	_, err := s.updateKey(ctx, hash, func(k *spoolv1.Key) { k.LastUsedAt = timestamppb.New(at) })
	return err
}

// updateKey changes a key item, on condition that it did not change since
// it was read.
func (s *Store) updateKey(ctx context.Context, hash string, change func(*spoolv1.Key)) (*spoolv1.Key, error) {
	for range raceRounds {
		it, err := s.getItem(ctx, keyItemKey(hash))
		if err != nil {
			return nil, err
		}
		if it == nil || !isKeyItem(it) {
			return nil, apierr.Errorf(spool.ErrNotFound, "no such key")
		}
		k, err := keyOf(it)
		if err != nil {
			return nil, err
		}
		change(k)
		b, err := marshal(k)
		if err != nil {
			return nil, err
		}
		e := newExpr()
		_, err = s.clients.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
			TableName:                 aws.String(s.cfg.JobsTable),
			Key:                       keyItemKey(hash),
			UpdateExpression:          aws.String("SET " + e.n(aKey) + " = " + e.v(bin(b))),
			ConditionExpression:       aws.String(e.eq(aKey, it[aKey])),
			ExpressionAttributeNames:  e.names,
			ExpressionAttributeValues: e.values,
		})
		if conditionFailed(err) {
			continue
		}
		if err != nil {
			return nil, awsErr(err, "update key %s", k.GetName())
		}
		return k, nil
	}
	return nil, apierr.Errorf(spool.ErrThrottled, "a key kept changing under this request; retry")
}

// getItem reads one item of the jobs table strongly consistently (nil when
// absent).
func (s *Store) getItem(ctx context.Context, key item) (item, error) {
	out, err := s.clients.db.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(s.cfg.JobsTable), Key: key, ConsistentRead: aws.Bool(true)})
	if err != nil {
		return nil, awsErr(err, "read %s", getStr(key, aJobID))
	}
	return out.Item, nil
}

// putItem writes an item of the jobs table whatever is there.
func (s *Store) putItem(ctx context.Context, it item) error {
	_, err := s.clients.db.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(s.cfg.JobsTable), Item: it})
	return err
}
