package awstest

import (
	"context"
	"fmt"
	"os"
	"sync/atomic"
	"testing"

	"github.com/spool-run/spool/internal/store/backends/awsstore"
)

var seq atomic.Int64

// NewConfig returns the configuration of a fresh AWS backend on s: tables
// and a queue prefix no other test uses (so tests sharing servers stay
// apart), with the tables created and queues created on first use.
func (s *Servers) NewConfig(t testing.TB) awsstore.Config {
	t.Helper()
	name := fmt.Sprintf("t%d-%d", os.Getpid(), seq.Add(1))
	cfg := awsstore.Config{
		DynamoDBEndpoint: s.DynamoDB,
		SQSEndpoint:      s.SQS,
		JobsTable:        name + "-jobs",
		EventsTable:      name + "-events",
		QueuePrefix:      name + "-",
		AutoCreateQueues: true,
		// Tests wait for leases to run out; checking the dead-letter
		// queues on every ExpireLeases makes that prompt.
		DeadLetterCheckInterval: -1,
	}
	if _, err := awsstore.Provision(context.Background(), cfg); err != nil {
		t.Fatalf("provision %s: %v", name, err)
	}
	return cfg
}
