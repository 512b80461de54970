package worker_test

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/spool-run/spool"
	"github.com/spool-run/spool/client"
	"github.com/spool-run/spool/worker"
)

// resetInput is a transport on which the first fails requests for a job's
// input break off as a server killed mid-request leaves them: the
// connection reset by the peer.
type resetInput struct {
	fails atomic.Int32
}

func (r *resetInput) RoundTrip(req *http.Request) (*http.Response, error) {
	if strings.HasSuffix(req.URL.Path, "/GetJobInput") && r.fails.Add(-1) >= 0 {
		return nil, &net.OpError{Op: "read", Net: "tcp", Err: syscall.ECONNRESET}
	}
	return http.DefaultTransport.RoundTrip(req)
}

// TestBatchInputSurvivesAServerAway: a batch job whose input cannot be
// fetched because the server is away waits for it and runs, instead of
// failing the batch.
func TestBatchInputSurvivesAServerAway(t *testing.T) {
	t.Parallel()
	rt := &resetInput{}
	rt.fails.Store(8)
	e := newEnv(t, 1, func(c *worker.Config) { c.HTTPClient = &http.Client{Transport: rt} })
	sc, err := e.c.StartScatter(context.Background(), client.ScatterParams{
		Job:     client.SubmitParams{Script: `cat > /dev/null; echo '{"ok": true}' > "$SPOOL_RESULT"`},
		Batches: []json.RawMessage{json.RawMessage(`[1, 2]`)},
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	sc, err = e.c.FollowScatter(ctx, sc.ID, 50*time.Millisecond, nil)
	if err != nil {
		t.Fatal(err)
	}
	if sc.State != spool.ScatterSucceeded {
		t.Fatalf("the scatter ended %s: %s", sc.State, sc.Error)
	}
	if left := rt.fails.Load(); left >= 0 {
		t.Fatalf("the input was fetched without meeting the resets (%d left)", left)
	}
}
