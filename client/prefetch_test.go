package client

import (
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/types/known/timestamppb"

	spoolv1 "github.com/spool-run/spool/gen/spool/v1"
	"github.com/spool-run/spool/gen/spool/v1/spoolv1connect"
)

// fiveEvents streams PROCESS_START events 1..5 and ends.
type fiveEvents struct {
	spoolv1connect.UnimplementedJobServiceHandler
}

func (fiveEvents) StreamEvents(_ context.Context, _ *connect.Request[spoolv1.StreamEventsRequest], s *connect.ServerStream[spoolv1.StreamEventsResponse]) error {
	for seq := int64(1); seq <= 5; seq++ {
		ev := &spoolv1.JobEvent{Sequence: seq, Timestamp: timestamppb.Now(), EventType: spoolv1.EventType_EVENT_TYPE_PROCESS_START,
			EventData: &spoolv1.JobEvent_ProcessStart{ProcessStart: &spoolv1.ProcessStartEvent{}}}
		if err := s.Send(&spoolv1.StreamEventsResponse{Event: ev}); err != nil {
			return err
		}
	}
	return nil
}

// countReceives counts the messages the client has taken off the wire.
type countReceives struct {
	connect.Interceptor
	n atomic.Int64
}

func (c *countReceives) WrapStreamingClient(next connect.StreamingClientFunc) connect.StreamingClientFunc {
	return func(ctx context.Context, spec connect.Spec) connect.StreamingClientConn {
		return &countingConn{StreamingClientConn: next(ctx, spec), n: &c.n}
	}
}

type countingConn struct {
	connect.StreamingClientConn
	n *atomic.Int64
}

func (c *countingConn) Receive(m any) error {
	err := c.StreamingClientConn.Receive(m)
	if err == nil {
		c.n.Add(1)
	}
	return err
}

// TestPrefetchOneAhead: while the consumer holds one event, the next one is
// received, and only that one.
func TestPrefetchOneAhead(t *testing.T) {
	mux := http.NewServeMux()
	mux.Handle(spoolv1connect.NewJobServiceHandler(fiveEvents{}))
	srv := httptest.NewServer(mux)
	defer srv.Close()
	// The embedded no-op interceptor supplies the methods not counted.
	counter := &countReceives{Interceptor: connect.UnaryInterceptorFunc(func(next connect.UnaryFunc) connect.UnaryFunc { return next })}
	rpc := spoolv1connect.NewJobServiceClient(srv.Client(), srv.URL, connect.WithInterceptors(counter))
	c := &Client{rpc: rpc, streams: rpc, log: slog.New(slog.DiscardHandler)}

	var seqs []int64
	for ev, err := range c.Events(context.Background(), "job", StreamOptions{}).Batches() {
		if err != nil {
			t.Fatal(err)
		}
		seqs = append(seqs, ev.Sequence)
		if len(seqs) > 1 {
			continue
		}
		for deadline := time.Now().Add(5 * time.Second); counter.n.Load() < 2; time.Sleep(time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatal("the next event was not received while the consumer held the first")
			}
		}
		time.Sleep(100 * time.Millisecond)
		if n := counter.n.Load(); n != 2 {
			t.Fatalf("%d events received while the consumer held the first: the read-ahead is not one message", n)
		}
	}
	if len(seqs) != 5 || seqs[0] != 1 || seqs[4] != 5 {
		t.Fatalf("got sequences %v", seqs)
	}
}
