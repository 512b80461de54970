package awsstore_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/spool-run/spool/internal/store/backends/awsstore"
	"github.com/spool-run/spool/internal/store/backends/awsstore/awstest"
)

// TestProvisionIsIdempotent: Provision creates tables and queues (with
// dead-letter queues and redrive), notes that dynalite has no TTL, and
// running it again changes nothing but queue attributes.
func TestProvisionIsIdempotent(t *testing.T) {
	t.Parallel()
	srv := awstest.Shared(t)
	name := fmt.Sprintf("prov%d", queueSeq.Add(1))
	cfg := awsstore.Config{
		DynamoDBEndpoint: srv.DynamoDB, SQSEndpoint: srv.SQS,
		JobsTable: name + "-jobs", EventsTable: name + "-events",
		QueuePrefix: name + "-", QueueNames: []string{"default", "gpu"}, MaxReceiveCount: 7,
	}
	ctx := context.Background()
	first, err := awsstore.Provision(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if len(first.Resources) != 12 {
		t.Fatalf("first run: %d resources, want 2 tables + 2 queues + 2 dead-letter queues + 2 × 3 priorities' queues:\n%v", len(first.Resources), first)
	}
	for _, r := range first.Resources {
		if r.Action != "created" || r.ID == "" {
			t.Fatalf("first run: %+v, want created", r)
		}
	}
	if len(first.Notes) != 1 || !strings.Contains(first.Notes[0], "TTL") {
		t.Fatalf("dynalite cannot enable TTL, so the report should say so: %v", first.Notes)
	}
	second, err := awsstore.Provision(ctx, cfg)
	if err != nil {
		t.Fatalf("second run: %v", err)
	}
	for _, r := range second.Resources {
		if !strings.HasPrefix(r.Action, "exists") {
			t.Fatalf("second run: %+v, want exists", r)
		}
	}

	client := sqs.New(sqs.Options{Region: "us-east-1", BaseEndpoint: aws.String(srv.SQS),
		Credentials: credentials.NewStaticCredentialsProvider("k", "s", "")})
	url, err := client.GetQueueUrl(ctx, &sqs.GetQueueUrlInput{QueueName: aws.String(name + "-gpu")})
	if err != nil {
		t.Fatal(err)
	}
	attrs, err := client.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: url.QueueUrl,
		AttributeNames: []sqstypes.QueueAttributeName{sqstypes.QueueAttributeNameAll}})
	if err != nil {
		t.Fatal(err)
	}
	var redrive struct {
		Target string `json:"deadLetterTargetArn"`
		Max    any    `json:"maxReceiveCount"`
	}
	if err := json.Unmarshal([]byte(attrs.Attributes["RedrivePolicy"]), &redrive); err != nil {
		t.Fatalf("queue has no redrive policy: %v (%v)", err, attrs.Attributes)
	}
	if !strings.HasSuffix(redrive.Target, ":"+name+"-gpu-dlq") || fmt.Sprint(redrive.Max) != "7" {
		t.Fatalf("redrive policy %+v, want the -dlq queue after 7 receives", redrive)
	}
	// A priority's queue dead-letters into its queue's dead-letter queue.
	p1, err := client.GetQueueUrl(ctx, &sqs.GetQueueUrlInput{QueueName: aws.String(name + "-gpu-p1")})
	if err != nil {
		t.Fatal(err)
	}
	p1Attrs, err := client.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: p1.QueueUrl,
		AttributeNames: []sqstypes.QueueAttributeName{sqstypes.QueueAttributeNameRedrivePolicy}})
	if err != nil || !strings.Contains(p1Attrs.Attributes["RedrivePolicy"], ":"+name+"-gpu-dlq") {
		t.Fatalf("priority 1's queue: redrive policy %q (%v), want the queue's -dlq", p1Attrs.Attributes["RedrivePolicy"], err)
	}
	if w := attrs.Attributes["ReceiveMessageWaitTimeSeconds"]; w != "0" {
		t.Fatalf("queue waits %s s by default; spool needs 0 to make short polls", w)
	}
	t.Log("\n" + second.String())
}
