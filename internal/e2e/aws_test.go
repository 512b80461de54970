package e2e

import (
	"testing"

	"github.com/spool-run/spool/internal/store/backends/awsstore/awstest"
)

// TestTwoReplicasOnAWS: two `spool server` replicas share the AWS backend
// (DynamoDB- and SQS-compatible test servers); a worker talks to replica A,
// a watcher follows the job on replica B and sees every line, once, in
// order, while the job runs. The worker's flush interval is a minute, so
// live output through B shows that the follow crossed replicas.
func TestTwoReplicasOnAWS(t *testing.T) {
	t.Parallel()
	testTwoServers(t, awsStore(t), []string{"SPOOL_EXECUTION_BATCHING_FLUSH_INTERVAL_SECONDS=60"}, true)
}

// awsStore starts DynamoDB- and SQS-compatible test servers and returns
// the `spool server` arguments of a store on them.
func awsStore(t *testing.T) []string {
	t.Helper()
	aws := awstest.Start(t).NewConfig(t)
	return configArgs(t, map[string]any{
		"server": map[string]any{"token_key": tokenKey},
		"store": map[string]any{"type": "aws", "aws": map[string]any{
			"dynamodb_endpoint": aws.DynamoDBEndpoint, "sqs_endpoint": aws.SQSEndpoint,
			"jobs_table": aws.JobsTable, "events_table": aws.EventsTable,
			"queue_prefix": aws.QueuePrefix, "auto_create_queues": true,
		}},
	})
}
