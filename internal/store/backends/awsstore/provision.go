package awsstore

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// Report says what Provision found and did.
type Report struct {
	Resources []Resource
	// Notes are things an operator should know (a feature the endpoint
	// lacks), none of which stop the store from working.
	Notes []string
}

// Resource is one queue or table.
type Resource struct {
	Kind   string // "DynamoDB table", "SQS queue", "SQS dead-letter queue"
	Name   string
	ID     string // table ARN or queue URL
	Action string // "created", "exists", "exists, attributes updated"
}

// String renders the report for a terminal.
func (r Report) String() string {
	var b strings.Builder
	for _, res := range r.Resources {
		fmt.Fprintf(&b, "%-22s %-40s %s\n", res.Kind, res.Name, res.Action)
	}
	for _, n := range r.Notes {
		fmt.Fprintf(&b, "note: %s\n", n)
	}
	return b.String()
}

// tableWait bounds how long Provision waits for a new table to become
// active (AWS takes seconds; local servers none).
const tableWait = 5 * time.Minute

// A new table is checked for being active from every 100 ms up to every
// 5 s (the SDK's default starts at 20 s, an age for a local server).
const (
	tablePollMin = 100 * time.Millisecond
	tablePollMax = 5 * time.Second
)

// Provision creates what the store needs, leaving what exists in place, so
// it can run again safely: both tables with their indexes (and TTL on
// both where the endpoint supports it), and for each of cfg.QueueNames
// without a configured URL, its SQS queue, dead-letter queue and the
// queues of the priorities other than the default. It is what
// `spool aws init` runs; deploy/aws/spool.yaml does the same with
// CloudFormation.
func Provision(ctx context.Context, cfg Config) (Report, error) {
	if err := cfg.Validate(); err != nil {
		return Report{}, err
	}
	cfg = cfg.withDefaults()
	c, err := newClients(ctx, cfg)
	if err != nil {
		return Report{}, err
	}
	// Without credentials every call below fails with the SDK's account
	// of its last source tried; say where it looked instead.
	if _, err := c.db.Options().Credentials.Retrieve(ctx); err != nil {
		return Report{}, noCredentials(err)
	}
	s := newStore(cfg, c)
	defer s.Close()
	var rep Report
	for _, def := range []*dynamodb.CreateTableInput{jobsTable(cfg.JobsTable), eventsTable(cfg.EventsTable)} {
		res, err := s.ensureTable(ctx, def)
		if err != nil {
			return rep, err
		}
		rep.Resources = append(rep.Resources, res)
	}
	note, err := s.enableTTL(ctx)
	if err != nil {
		return rep, err
	}
	if note != "" {
		rep.Notes = append(rep.Notes, note)
	}
	for _, q := range cfg.QueueNames {
		if _, ok := cfg.Queues[q]; ok {
			continue // configured by URL: managed elsewhere
		}
		name, _ := cfg.sqsName(q) // checked by Validate
		made, err := s.createQueue(ctx, name, name+DeadLetterSuffix)
		if err != nil {
			return rep, err
		}
		rep.Resources = append(rep.Resources, made.DLQ, made.Main)
		// The priorities' queues (see priority.go): servers poll one only
		// once a job of its priority was enqueued.
		for _, p := range otherPriorities() {
			made, err := s.createQueue(ctx, name+prioritySuffix(p), name+DeadLetterSuffix)
			if err != nil {
				return rep, err
			}
			rep.Resources = append(rep.Resources, made.Main)
		}
	}
	return rep, nil
}

// ensureTable creates a table, or checks the existing one has the indexes
// spool uses.
func (s *Store) ensureTable(ctx context.Context, def *dynamodb.CreateTableInput) (Resource, error) {
	name := aws.ToString(def.TableName)
	res := Resource{Kind: "DynamoDB table", Name: name, Action: "created"}
	_, err := s.clients.db.CreateTable(ctx, def)
	var inUse *types.ResourceInUseException
	switch {
	case errors.As(err, &inUse):
		res.Action = "exists"
	case err != nil:
		return res, awsErr(err, "create DynamoDB table %s", name)
	}
	w := dynamodb.NewTableExistsWaiter(s.clients.db, func(o *dynamodb.TableExistsWaiterOptions) {
		o.MinDelay, o.MaxDelay = tablePollMin, tablePollMax
	})
	out, err := w.WaitForOutput(ctx, &dynamodb.DescribeTableInput{TableName: def.TableName}, tableWait)
	if err != nil {
		return res, awsErr(err, "wait for DynamoDB table %s to become active", name)
	}
	res.ID = aws.ToString(out.Table.TableArn)
	have := indexNames(&dynamodb.CreateTableInput{
		GlobalSecondaryIndexes: gsiDefs(out.Table.GlobalSecondaryIndexes),
		LocalSecondaryIndexes:  lsiDefs(out.Table.LocalSecondaryIndexes),
	})
	for _, want := range indexNames(def) {
		if !slices.Contains(have, want) {
			return res, fmt.Errorf("DynamoDB table %s exists without index %s, which spool needs: it was made for something else or by an older spool; use other table names or recreate it", name, want)
		}
	}
	return res, nil
}

func gsiDefs(d []types.GlobalSecondaryIndexDescription) []types.GlobalSecondaryIndex {
	out := make([]types.GlobalSecondaryIndex, len(d))
	for i, g := range d {
		out[i] = types.GlobalSecondaryIndex{IndexName: g.IndexName}
	}
	return out
}

func lsiDefs(d []types.LocalSecondaryIndexDescription) []types.LocalSecondaryIndex {
	out := make([]types.LocalSecondaryIndex, len(d))
	for i, l := range d {
		out[i] = types.LocalSecondaryIndex{IndexName: l.IndexName}
	}
	return out
}

// enableTTL turns on expiry by the ttl attribute of both tables: events
// always carry it, and final jobs and request markers do with
// Config.JobTTL. An endpoint without TTL support (dynalite) gets a note,
// not a failure: the items still carry ttl, so turning TTL on later
// expires the old ones too.
func (s *Store) enableTTL(ctx context.Context) (note string, err error) {
	var lacking []string
	code := ""
	for _, name := range []string{s.cfg.JobsTable, s.cfg.EventsTable} {
		c, err := s.enableTableTTL(ctx, name)
		if err != nil {
			return "", err
		}
		if c != "" {
			lacking, code = append(lacking, name), c
		}
	}
	if len(lacking) == 0 {
		return "", nil
	}
	return fmt.Sprintf("this DynamoDB endpoint cannot enable TTL on %s (%s): events and expired jobs will not be deleted here. "+
		"Every event (and, with a jobs retention, every final job) carries a %q attribute, so enabling TTL on it later (aws dynamodb update-time-to-live) expires them too.",
		strings.Join(lacking, " and "), code, aTTL), nil
}

// enableTableTTL turns on TTL by the ttl attribute on one table. It
// returns the error code of an endpoint that cannot ("" when on).
func (s *Store) enableTableTTL(ctx context.Context, name string) (missing string, err error) {
	table := aws.String(name)
	d, err := s.clients.db.DescribeTimeToLive(ctx, &dynamodb.DescribeTimeToLiveInput{TableName: table})
	if err == nil {
		switch d.TimeToLiveDescription.TimeToLiveStatus {
		case types.TimeToLiveStatusEnabled, types.TimeToLiveStatusEnabling:
			return "", nil
		}
	}
	_, err = s.clients.db.UpdateTimeToLive(ctx, &dynamodb.UpdateTimeToLiveInput{
		TableName:               table,
		TimeToLiveSpecification: &types.TimeToLiveSpecification{AttributeName: aws.String(aTTL), Enabled: aws.Bool(true)},
	})
	if err == nil {
		return "", nil
	}
	if code := errorCode(err); code == "" || strings.Contains(code, "Throttl") {
		return "", awsErr(err, "enable TTL on DynamoDB table %s", name)
	}
	return errorCode(err), nil
}
