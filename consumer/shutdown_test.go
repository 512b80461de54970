package consumer_test

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/spool-run/spool/consumer"
)

// Shutdown hands every buffered message to the handler at once, without
// waiting for the batch timeout, commits what the handler accepts, and
// does not retry what it refuses: those messages come back to the next
// consumer of the group, which finds nothing else left.
func TestShutdownHandsOverWhatIsBuffered(t *testing.T) {
	c := cluster(t, 2)
	cfg := config(c, "g")
	cfg.BatchSize = 4
	cfg.BatchTimeout = time.Minute
	var seen journal
	r := start(t, cfg, func(_ context.Context, msgs []consumer.Message) (bool, error) {
		b := describe(msgs)
		seen.add(b)
		// Partition 1 refuses its second batch, 4-6.
		return b.partition == 0 || b.offsets[0] == 0, nil
	})
	produce(t, c, 7, 0, 1)
	// 7 messages: a full batch of 4 goes at once, 3 wait for a
	// timeout that is a minute away.
	eventually(t, 10*time.Second, "3 messages buffered in each partition", func() bool {
		return r.Buffered(0) == 3 && r.Buffered(1) == 3
	})
	began := time.Now()
	r.shutdown(t)
	if took := time.Since(began); took > 5*time.Second {
		t.Fatalf("Shutdown took %v", took)
	}
	if got := seen.offsets(0); !slices.Equal(got, seq(0, 7)) {
		t.Fatalf("partition 0 handled %v, want 0-6", got)
	}
	if got := seen.offsets(1); !slices.Equal(got, seq(0, 7)) {
		t.Fatalf("partition 1 handled %v, want 0-6 with 4-6 once (no retry while stopping)", got)
	}
	offs := committed(t, c, "g")
	if offs[0].At != 7 || offs[1].At != 4 {
		t.Fatalf("committed %d and %d, want 7 and 4", offs[0].At, offs[1].At)
	}

	batches := make(chan batch, 10)
	cfg.BatchTimeout = 50 * time.Millisecond
	start(t, cfg, func(_ context.Context, msgs []consumer.Message) (bool, error) {
		batches <- describe(msgs)
		return true, nil
	})
	produce(t, c, 1, 0)
	got := []string{receive(t, batches, "a batch").String(), receive(t, batches, "a batch").String()}
	slices.Sort(got)
	if want := []string{"p0[7]", "p1[4 5 6]"}; !slices.Equal(got, want) {
		t.Fatalf("the next consumer got %v, want %v", got, want)
	}
}

// A Shutdown whose context is already done stops at once: the handler's
// context is cancelled, buffered messages are not handed over, and nothing
// more is committed.
func TestShutdownWithDoneContextStopsAtOnce(t *testing.T) {
	c := cluster(t, 1)
	cfg := config(c, "g")
	cfg.BatchSize = 3
	entered := make(chan struct{}, 1)
	var calls atomic.Int32
	var handlerErr atomic.Value
	r := start(t, cfg, func(ctx context.Context, _ []consumer.Message) (bool, error) {
		calls.Add(1)
		entered <- struct{}{}
		<-ctx.Done()
		handlerErr.Store(ctx.Err())
		return true, nil
	})
	produce(t, c, 9, 0)
	receive(t, entered, "the first batch in the handler")
	eventually(t, 10*time.Second, "6 messages buffered", func() bool { return r.Buffered(0) == 6 })

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	began := time.Now()
	if err := r.Shutdown(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("Shutdown: %v, want context.Canceled", err)
	}
	if took := time.Since(began); took > 2*time.Second {
		t.Fatalf("Shutdown took %v", took)
	}
	if err := receive(t, r.done, "Run's return"); err != nil {
		t.Fatalf("Run: %v", err)
	}
	if err, _ := handlerErr.Load().(error); !errors.Is(err, context.Canceled) {
		t.Fatalf("the handler's context ended with %v", err)
	}
	if n := calls.Load(); n != 1 {
		t.Fatalf("the handler ran %d times, want once", n)
	}
	if got := committedAt(t, c, "g", 0); got != -1 {
		t.Fatalf("committed %d", got)
	}
}

// When Run's context ends, Run stops at once the same way and returns the
// context's error.
func TestRunContextEndStopsAtOnce(t *testing.T) {
	c := cluster(t, 1)
	entered := make(chan struct{}, 1)
	r, err := consumer.NewWithHooks(config(c, "g"), func(ctx context.Context, _ []consumer.Message) (bool, error) {
		entered <- struct{}{}
		<-ctx.Done()
		return true, nil
	}, consumer.TestHooks{Kgo: fastGroup})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.Run(ctx) }()
	produce(t, c, 2, 0)
	receive(t, entered, "the batch in the handler")
	cancel()
	if err := receive(t, done, "Run's return"); !errors.Is(err, context.Canceled) {
		t.Fatalf("Run: %v, want context.Canceled", err)
	}
	if got := committedAt(t, c, "g", 0); got != -1 {
		t.Fatalf("committed %d", got)
	}
	// Shutdown after the end is a no-op that reports success.
	if err := r.Shutdown(context.Background()); err != nil {
		t.Fatalf("Shutdown after Run: %v", err)
	}
}

func TestShutdownBeforeRun(t *testing.T) {
	c := cluster(t, 1)
	r, err := consumer.New(config(c, "g"), func(context.Context, []consumer.Message) (bool, error) { return true, nil })
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Shutdown(context.Background()); err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
	if err := r.Run(context.Background()); err != nil {
		t.Fatalf("Run after Shutdown: %v", err)
	}
}

func TestRunTwice(t *testing.T) {
	c := cluster(t, 1)
	handled := make(chan struct{}, 1)
	r := start(t, config(c, "g"), func(context.Context, []consumer.Message) (bool, error) {
		handled <- struct{}{}
		return true, nil
	})
	produce(t, c, 1, 0)
	receive(t, handled, "the first Run at work")
	if err := r.Run(context.Background()); err == nil {
		t.Fatal("a second Run returned nil")
	}
	r.shutdown(t)
}

// A batch waiting out a long backoff when Shutdown begins is delivered once
// more at once, not after the backoff, and not again if refused.
func TestShutdownDoesNotWaitForTheBackoff(t *testing.T) {
	c := cluster(t, 1)
	cfg := config(c, "g")
	cfg.RetryBackoff, cfg.MaxRetryBackoff = time.Minute, time.Minute
	// The stop must begin while the batch waits out its backoff, not while
	// the handler still holds it: the warning that it will be delivered again
	// is logged just before that wait starts.
	waiting := make(chan struct{}, 10)
	cfg.Logger = slog.New(&signalHandler{msg: "consumer: batch not done; delivering it again", ch: waiting})
	refused := make(chan struct{}, 10)
	r := start(t, cfg, func(_ context.Context, msgs []consumer.Message) (bool, error) {
		refused <- struct{}{}
		return false, nil
	})
	produce(t, c, 3, 0)
	receive(t, refused, "the first refusal")
	receive(t, waiting, "the backoff after the first refusal")
	began := time.Now()
	r.shutdown(t)
	if took := time.Since(began); took > 5*time.Second {
		t.Fatalf("Shutdown took %v", took)
	}
	if n := len(refused); n != 1 {
		t.Fatalf("%d more deliveries during the stop, want 1", n)
	}
	if got := committedAt(t, c, "g", 0); got != -1 {
		t.Fatalf("committed %d", got)
	}
}

// signalHandler is a slog handler that sends on ch each time msg is logged.
type signalHandler struct {
	msg string
	ch  chan struct{}
}

func (h *signalHandler) Enabled(context.Context, slog.Level) bool { return true }
func (h *signalHandler) WithAttrs([]slog.Attr) slog.Handler       { return h }
func (h *signalHandler) WithGroup(string) slog.Handler            { return h }
func (h *signalHandler) Handle(_ context.Context, r slog.Record) error {
	if r.Message == h.msg {
		select {
		case h.ch <- struct{}{}:
		default:
		}
	}
	return nil
}
