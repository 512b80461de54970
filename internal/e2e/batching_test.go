package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"connectrpc.com/connect"

	"github.com/spool-run/spool"
	"github.com/spool-run/spool/client"
	spoolv1 "github.com/spool-run/spool/gen/spool/v1"
	"github.com/spool-run/spool/internal/wire"
)

// TestJobBatching: on a server whose own flush interval is a minute, a job
// submitted with --batch-lines 10 has its output stored in batches of at
// most 10 lines, and a job asking for a 200ms flush interval has its lines
// stored while it still runs, where the server's interval would hold them
// for a minute.
func TestJobBatching(t *testing.T) {
	t.Parallel()
	addr := freePort(t)
	_, c := startServerEnv(t, addr, t.TempDir(), []string{"SPOOL_EXECUTION_BATCHING_FLUSH_INTERVAL_SECONDS=60"})
	url := "http://" + addr
	startWorker(t, "worker", url, t.TempDir(), "--concurrency", "2")
	ctx := context.Background()

	// Through the command line, as a person asks for it.
	sub := run(t, "submit", "submit", "--server", url, "--batch-lines", "10", "--", "seq", "1", "95")
	if err := sub.cmd.Wait(); err != nil {
		t.Fatalf("spool submit: %v\n%s", err, sub.out.String())
	}
	lines := waitFinal(t, c, strings.TrimSpace(sub.out.String()))
	if lines.State != spool.Succeeded || lines.LineCount != 95 || lines.Execution.MaxBatchSize != 10 {
		t.Fatalf("the --batch-lines job: %s, %d lines, batches of %d", lines.State, lines.LineCount, lines.Execution.MaxBatchSize)
	}
	sizes := batchSizes(t, url, lines.ID)
	total := 0
	for _, n := range sizes {
		if n > 10 {
			t.Fatalf("a batch of %d lines, above the job's 10: %v", n, sizes)
		}
		total += n
	}
	if total != 95 || len(sizes) < 10 {
		t.Fatalf("batches %v: %d lines in %d batches; want 95 in at least 10", sizes, total, len(sizes))
	}

	// 20 lines 50ms apart, then a long wait: only a flush on time stores
	// lines 2 to 20 (the first goes at once, the end of a quiet spell).
	script := `i=1; while [ $i -le 20 ]; do echo $i; sleep 0.05; i=$((i+1)); done; sleep 120`
	quick, _, err := c.Submit(ctx, client.SubmitParams{Script: script, Batching: spool.Batching{FlushInterval: 200 * time.Millisecond}})
	if err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		j, err := c.Job(ctx, quick.ID)
		if err != nil {
			t.Fatal(err)
		}
		if j.LineCount == 20 {
			if j.State != spool.Running {
				t.Fatalf("the job is %s; its lines were stored only at its end", j.State)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after 30 s the job with a 200ms flush interval has %d of its 20 lines stored", j.LineCount)
		}
	}
	if _, err := c.Cancel(ctx, quick.ID, "test over"); err != nil {
		t.Fatal(err)
	}
}

// batchSizes reads a job's stored output batches: the lines of each.
func batchSizes(t *testing.T, url, id string) []int {
	t.Helper()
	rpc, err := wire.Dial(url, wire.Options{APIKey: adminKey})
	if err != nil {
		t.Fatal(err)
	}
	stream, err := rpc.StreamEvents(context.Background(), connect.NewRequest(&spoolv1.StreamEventsRequest{JobId: id,
		EventTypes: []spoolv1.EventType{spoolv1.EventType_EVENT_TYPE_OUTPUT_BATCH}}))
	if err != nil {
		t.Fatal(err)
	}
	defer stream.Close()
	var sizes []int
	for stream.Receive() {
		if b := stream.Msg().GetEvent().GetOutputBatch(); b != nil {
			sizes = append(sizes, len(b.GetOutputs()))
		}
	}
	if err := stream.Err(); err != nil {
		t.Fatal(fmt.Errorf("reading the job's batches: %w", err))
	}
	return sizes
}
