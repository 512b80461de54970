package awsstore

import (
	"context"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"google.golang.org/protobuf/proto"

	"github.com/spool-run/spool"
	spoolv1 "github.com/spool-run/spool/gen/spool/v1"
	"github.com/spool-run/spool/internal/apierr"
	"github.com/spool-run/spool/internal/store"
)

// Schedules are jobs-table items (see schema.go): the schedule whole, and
// its revision apart, which UpdateSchedule's condition compares.

func scheduleKey(name string) item { return jobKey(scheduleKeyPrefix + name) }

// scheduleItem is the item of schedule sc at its revision.
func scheduleItem(sc *spoolv1.Schedule) (item, error) {
	b, err := marshal(sc)
	if err != nil {
		return nil, err
	}
	it := scheduleKey(sc.GetName())
	it[aKind], it[aSchedule], it[aRevision] = str(kindSchedule), bin(b), num(sc.GetRevision())
	it[aListPart], it[aCreatedKey] = str(schedulesPart), str(sc.GetName())
	return it, nil
}

func decodeSchedule(it item) (*spoolv1.Schedule, error) {
	sc := &spoolv1.Schedule{}
	if err := proto.Unmarshal(getBin(it, aSchedule), sc); err != nil {
		return nil, fmt.Errorf("schedule %s: stored schedule is corrupt: %w", getStr(it, aCreatedKey), err)
	}
	return sc, nil
}

// CreateSchedule implements store.ScheduleStore: a PutItem only if absent.
func (s *Store) CreateSchedule(ctx context.Context, sc *spoolv1.Schedule) error {
	sc.Revision = 1
	it, err := scheduleItem(sc)
	if err != nil {
		return err
	}
	written, err := s.putIfAbsent(ctx, it)
	if err != nil {
		return awsErr(err, "create schedule %q", sc.GetName())
	}
	if !written {
		return apierr.Errorf(spool.ErrAlreadyExists, "a schedule named %q exists already", sc.GetName())
	}
	return nil
}

// GetSchedule implements store.ScheduleStore.
func (s *Store) GetSchedule(ctx context.Context, name string) (*spoolv1.Schedule, error) {
	it, err := s.getItem(ctx, scheduleKey(name))
	if err != nil {
		return nil, err
	}
	if it == nil || getStr(it, aKind) != kindSchedule {
		return nil, store.ScheduleNotFound(name)
	}
	return decodeSchedule(it)
}

// ListSchedules implements store.ScheduleStore: the schedules' partition
// of by-time, in name order, then the items.
func (s *Store) ListSchedules(ctx context.Context) ([]*spoolv1.Schedule, error) {
	e := newExpr()
	in := &dynamodb.QueryInput{
		TableName:                 aws.String(s.cfg.JobsTable),
		IndexName:                 aws.String(indexByTime),
		KeyConditionExpression:    aws.String(e.eq(aListPart, str(schedulesPart))),
		ExpressionAttributeNames:  e.names,
		ExpressionAttributeValues: e.values,
	}
	var keys []item
	var names []string
	for p := dynamodb.NewQueryPaginator(s.clients.db, in); p.HasMorePages(); {
		page, err := p.NextPage(ctx)
		if err != nil {
			return nil, awsErr(err, "list schedules")
		}
		for _, it := range page.Items {
			keys = append(keys, item{aJobID: it[aJobID]})
			names = append(names, getStr(it, aCreatedKey))
		}
	}
	items, err := s.batchGet(ctx, s.cfg.JobsTable, keys, consistentAll())
	if err != nil {
		return nil, err
	}
	byName := make(map[string]*spoolv1.Schedule, len(items))
	for _, it := range items {
		if getStr(it, aKind) != kindSchedule {
			continue
		}
		sc, err := decodeSchedule(it)
		if err != nil {
			return nil, err
		}
		byName[sc.GetName()] = sc
	}
	out := make([]*spoolv1.Schedule, 0, len(byName))
	for _, n := range names { // the index's order: by name
		if sc, ok := byName[n]; ok {
			out = append(out, sc)
		}
	}
	return out, nil
}

// UpdateSchedule implements store.ScheduleStore: a PutItem on condition
// that the stored revision is the one sc was read at.
func (s *Store) UpdateSchedule(ctx context.Context, sc *spoolv1.Schedule) error {
	read := sc.GetRevision()
	next := proto.CloneOf(sc)
	next.Revision = read + 1
	it, err := scheduleItem(next)
	if err != nil {
		return err
	}
	e := newExpr()
	_, err = s.clients.db.PutItem(ctx, &dynamodb.PutItemInput{
		TableName:                 aws.String(s.cfg.JobsTable),
		Item:                      it,
		ConditionExpression:       aws.String(and(e.eq(aKind, str(kindSchedule)), e.eq(aRevision, num(read)))),
		ExpressionAttributeNames:  e.names,
		ExpressionAttributeValues: e.values,
	})
	if conditionFailed(err) {
		if _, err := s.GetSchedule(ctx, sc.GetName()); err != nil {
			return err
		}
		return store.ScheduleMoved(sc.GetName())
	}
	if err != nil {
		return awsErr(err, "update schedule %q", sc.GetName())
	}
	sc.Revision = next.Revision
	return nil
}

// DeleteSchedule implements store.ScheduleStore.
func (s *Store) DeleteSchedule(ctx context.Context, name string) error {
	e := newExpr()
	_, err := s.clients.db.DeleteItem(ctx, &dynamodb.DeleteItemInput{
		TableName:                 aws.String(s.cfg.JobsTable),
		Key:                       scheduleKey(name),
		ConditionExpression:       aws.String(e.eq(aKind, str(kindSchedule))),
		ExpressionAttributeNames:  e.names,
		ExpressionAttributeValues: e.values,
	})
	if conditionFailed(err) {
		return store.ScheduleNotFound(name)
	}
	if err != nil {
		return awsErr(err, "delete schedule %q", name)
	}
	return nil
}
