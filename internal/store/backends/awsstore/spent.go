package awsstore

import (
	"context"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
)

// Spent ids (store.SpentStore) are jobs-table items of their own kind,
// under "spent#" + the id, with spent_until (Unix microseconds) and ttl
// just after it, so DynamoDB deletes them once they are of no use. TTL
// deletes late (hours, even days), so an item past its spent_until counts
// as absent: the conditional put overwrites it, and Spent ignores it.
const (
	aSpentUntil = "spent_until" // N, Unix microseconds

	kindSpent      = "spent"
	spentKeyPrefix = "spent#"
)

func spentKey(id string) item { return item{aJobID: str(spentKeyPrefix + id)} }

// SpendOnce implements store.SpentStore with one conditional put: of
// servers spending one id at once, exactly one writes it.
func (s *Store) SpendOnce(ctx context.Context, id string, until time.Time) (bool, error) {
	it := spentKey(id)
	it[aKind], it[aSpentUntil], it[aTTL] = str(kindSpent), num(until.UnixMicro()), num(until.Unix()+1)
	e := newExpr()
	_, err := s.clients.db.PutItem(ctx, &dynamodb.PutItemInput{
		TableName: aws.String(s.cfg.JobsTable),
		Item:      it,
		ConditionExpression: aws.String("attribute_not_exists(" + e.n(aJobID) + ") OR " +
			e.n(aSpentUntil) + " <= " + e.v(num(time.Now().UnixMicro()))),
		ExpressionAttributeNames:  e.names,
		ExpressionAttributeValues: e.values,
	})
	if conditionFailed(err) {
		return false, nil
	}
	if err != nil {
		return false, awsErr(err, "spend %s", id)
	}
	return true, nil
}

// Spent implements store.SpentStore.
func (s *Store) Spent(ctx context.Context, id string) (bool, error) {
	it, err := s.getItem(ctx, spentKey(id))
	if err != nil || it == nil {
		return false, err
	}
	until, err := getInt(it, aSpentUntil)
	return err == nil && until > time.Now().UnixMicro(), err
}
