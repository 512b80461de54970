package awsstore

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/spool-run/spool/internal/store/storekit"
)

// The workers polling each replica (store.PollerSharer) live in one
// jobs-table item, "pollers#registry", with an attribute per replica:
// pollerAttrPrefix + the replica's id, a map of at (N, Unix microseconds)
// and polls (M: queue name to an SS of worker names). A replica rewrites
// only its own attribute, so replicas never race, and one read finds them
// all. A replica that stops leaves its attribute behind: readers skip it
// once old, and remove it after pollersForgetAfter.
const (
	pollersKey         = "pollers#registry"
	kindPollers        = "pollers"
	pollerAttrPrefix   = "replica_"
	aPollerAt          = "at"
	aPolls             = "polls"
	pollersForgetAfter = time.Hour
)

// newReplicaID names this Store among the replicas sharing the tables.
func newReplicaID() string {
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// SharePollers implements store.PollerSharer.
func (s *Store) SharePollers(ctx context.Context, polls map[string][]string) error {
	m := map[string]types.AttributeValue{}
	for q, ws := range polls {
		if len(ws) > 0 { // a string set is never empty
			m[q] = &types.AttributeValueMemberSS{Value: ws}
		}
	}
	rec := &types.AttributeValueMemberM{Value: map[string]types.AttributeValue{
		aPollerAt: num(storekit.Now().UnixMicro()),
		aPolls:    &types.AttributeValueMemberM{Value: m},
	}}
	u := newUpdate(newExpr()).Set(aKind, str(kindPollers)).Set(pollerAttrPrefix+s.replica, rec)
	if _, err := s.updateItem(ctx, jobKey(pollersKey), u, ""); err != nil {
		return awsErr(err, "record the workers polling this replica")
	}
	return nil
}

// SharedPollers implements store.PollerSharer. It also removes the records
// of replicas gone for pollersForgetAfter.
func (s *Store) SharedPollers(ctx context.Context, since time.Time) (map[string][]string, error) {
	it, err := s.getItem(ctx, jobKey(pollersKey))
	if err != nil {
		return nil, err
	}
	out := map[string][]string{}
	var gone []string
	for name, v := range it {
		rec, ok := v.(*types.AttributeValueMemberM)
		if !strings.HasPrefix(name, pollerAttrPrefix) || !ok {
			continue
		}
		at, err := getInt(rec.Value, aPollerAt)
		if err != nil {
			continue
		}
		when := time.UnixMicro(at)
		if when.Before(since) {
			if storekit.Now().Sub(when) > pollersForgetAfter {
				gone = append(gone, name)
			}
			continue
		}
		polls, _ := rec.Value[aPolls].(*types.AttributeValueMemberM)
		if polls == nil {
			continue
		}
		for q, ws := range polls.Value {
			if set, ok := ws.(*types.AttributeValueMemberSS); ok {
				out[q] = append(out[q], set.Value...)
			}
		}
	}
	if len(gone) > 0 {
		if _, err := s.updateItem(ctx, jobKey(pollersKey), newUpdate(newExpr()).Remove(gone...), ""); err != nil {
			s.log.Warn("could not forget the workers of replicas gone for an hour", "error", err)
		}
	}
	return out, nil
}
