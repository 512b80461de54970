package awsstore_test

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/spool-run/spool/internal/store/backends/awsstore/awstest"
)

// TestAWSCLISeesOutputBatches inspects a stored job with the AWS CLI, as an
// operator would: `aws dynamodb scan` on the events table shows the
// OUTPUT_BATCH items (event_type 2), each with its ttl.
func TestAWSCLISeesOutputBatches(t *testing.T) {
	t.Parallel()
	awsBin, err := exec.LookPath("aws")
	if err != nil {
		t.Fatal("install the AWS CLI: apt-get install -y awscli (make test does this)")
	}
	srv := awstest.Shared(t)
	cfg := srv.NewConfig(t)
	s := openStore(t, cfg)
	l := running(t, s, newJob(newQueue()), time.Minute)
	appendAll(t, s, l.LeaseRef, outputJob(120, 50)) // start, 3 batches, end

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, awsBin, "dynamodb", "scan", "--table-name", cfg.EventsTable,
		"--endpoint-url", srv.DynamoDB, "--region", "us-east-1", "--output", "json")
	// The machine's own AWS settings stay out: this talks to dynalite.
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "AWS_") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(cmd.Env, "AWS_ACCESS_KEY_ID=spool-local", "AWS_SECRET_ACCESS_KEY=spool-local", "AWS_PAGER=",
		"AWS_CONFIG_FILE=/dev/null", "AWS_SHARED_CREDENTIALS_FILE=/dev/null")
	out, err := cmd.Output()
	if err != nil {
		var stderr []byte
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = ee.Stderr
		}
		t.Fatalf("aws dynamodb scan: %v\n%s", err, stderr)
	}
	var scan struct {
		Items []map[string]map[string]string
	}
	if err := json.Unmarshal(out, &scan); err != nil {
		t.Fatalf("aws dynamodb scan printed something else than JSON: %v\n%s", err, out)
	}
	byType := map[string]int{}
	for _, it := range scan.Items {
		byType[it["event_type"]["N"]]++
		if it["ttl"]["N"] == "" || it["payload"]["B"] == "" {
			t.Fatalf("item without ttl or payload: %v", it)
		}
	}
	if byType["2"] != 3 || byType["3"] != 1 || byType["4"] != 1 {
		t.Fatalf("scan found items by event_type %v, want 3 OUTPUT_BATCH (2), 1 PROCESS_START (3), 1 PROCESS_END (4)", byType)
	}
}
