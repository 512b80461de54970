package e2e

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/spool-run/spool"
	"github.com/spool-run/spool/client"
	spoolv1 "github.com/spool-run/spool/gen/spool/v1"
	"github.com/spool-run/spool/internal/store/backends/awsstore/awstest"
)

// TestTwoReplicasOnAWS: two `spool server` replicas share the AWS backend
// (DynamoDB- and SQS-compatible test servers); a worker talks to replica A,
// a watcher follows the job on replica B and sees every line, once, in
// order, while the job runs.
func TestTwoReplicasOnAWS(t *testing.T) {
	servers := awstest.Start(t)
	aws := servers.NewConfig(t)
	cfg := map[string]any{
		"server": map[string]any{"token_key": "MDEyMzQ1Njc4OTAxMjM0NTY3ODkwMTIzNDU2Nzg5MDE="},
		"store": map[string]any{"type": "aws", "aws": map[string]any{
			"dynamodb_endpoint": aws.DynamoDBEndpoint, "sqs_endpoint": aws.SQSEndpoint,
			"jobs_table": aws.JobsTable, "events_table": aws.EventsTable,
			"queue_prefix": aws.QueuePrefix, "auto_create_queues": true,
		}},
	}
	raw, err := yaml.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	cfgPath := filepath.Join(t.TempDir(), "spool.yaml")
	if err := os.WriteFile(cfgPath, raw, 0o600); err != nil {
		t.Fatal(err)
	}
	_, a := startServer(t, freePort(t), t.TempDir(), "--config", cfgPath)
	_, b := startServer(t, freePort(t), t.TempDir(), "--config", cfgPath)
	startWorker(t, "worker", a.URL(), t.TempDir())

	job, _, err := a.Submit(context.Background(), client.Submission{Script: slowCount(40)})
	if err != nil {
		t.Fatal(err)
	}
	s := b.Events(context.Background(), job.GetJobId(), client.StreamOptions{Follow: true})
	var (
		lines     []string
		firstSeen time.Time
		prevSeq   int64
	)
	for ev, err := range s.All() {
		if err != nil {
			t.Fatalf("watching on replica B: %v", err)
		}
		if ev.GetSequence() != prevSeq+1 {
			t.Fatalf("sequence %d after %d", ev.GetSequence(), prevSeq)
		}
		prevSeq = ev.GetSequence()
		if d := ev.GetOutputData(); d != nil {
			if firstSeen.IsZero() {
				firstSeen = time.Now()
			}
			lines = append(lines, string(d.GetOutput()))
		}
	}
	done := s.Finished()
	if done == nil || done.GetState() != spoolv1.JobState_JOB_STATE_SUCCEEDED {
		t.Fatalf("replica B's stream ended with %v", done)
	}
	if len(lines) != 40 || lines[0] != "1" || lines[39] != "40" {
		t.Fatalf("replica B saw %d lines (%v…)", len(lines), lines[:min(3, len(lines))])
	}
	for i, l := range lines {
		if l != strconv.Itoa(i+1) {
			t.Fatalf("line %d is %q", i+1, l)
		}
	}
	// Live, not replayed at the end: the first line reached B well before
	// the job (about 2 s of output) finished.
	if finished := done.GetResult().GetFinishedAt().AsTime(); !firstSeen.Before(finished.Add(-time.Second)) {
		t.Fatalf("replica B saw the first line at %v, the job finished at %v: not live", firstSeen, finished)
	}

	// A key made through A works on B; revoked through A, B refuses it on
	// its very next call: keys live in the shared store, never in a cache.
	_, secret, err := a.CreateKey(context.Background(), client.NewKey{Name: "reader", Role: "read"})
	if err != nil {
		t.Fatal(err)
	}
	reader, err := client.New(b.URL(), client.WithAPIKey(secret))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := reader.Job(context.Background(), job.GetJobId()); err != nil {
		t.Fatalf("replica B with a key made on A: %v", err)
	}
	if _, err := a.RevokeKey(context.Background(), "reader"); err != nil {
		t.Fatal(err)
	}
	if _, err := reader.Job(context.Background(), job.GetJobId()); !errors.Is(err, spool.ErrUnauthenticated) {
		t.Fatalf("replica B right after the key was revoked on A: %v, want unauthenticated", err)
	}
}
