package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/spool-run/spool/consumer"
	"github.com/spool-run/spool/internal/backoff"
)

// The consumer bench: what batching buys a Kafka consumer whose handler
// waits on I/O. Both runs read the same messages, produced beforehand on
// an in-process kfake cluster, with the same consumer; partitions run side
// by side in both.
const (
	consumerBenchMessages   = 2000
	consumerBenchPartitions = 4
	consumerBenchIO         = 10 * time.Millisecond // time.Sleep stands in for a call out
)

// runConsumerBench measures (a) batches of one message, handled one at a
// time, against (b) batches of 20 whose messages the handler handles
// concurrently, and prints messages/s of each and the ratio.
func runConsumerBench() {
	fmt.Printf("spool bench: %d CPUs, %s; Kafka consumer on kfake (in process), %d messages on %d partitions, %v of simulated I/O per message\n\n",
		runtime.NumCPU(), runtime.Version(), consumerBenchMessages, consumerBenchPartitions, consumerBenchIO)
	ctx := context.Background()
	cluster, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(consumerBenchPartitions, "bench"))
	if err != nil {
		fail(err)
	}
	defer cluster.Close()
	if err := produceConsumerBench(ctx, cluster.ListenAddrs()); err != nil {
		fail(err)
	}

	sequential := func(ctx context.Context, batch []consumer.Message) (bool, error) {
		for range batch {
			if err := simulatedIO(ctx); err != nil {
				return false, err
			}
		}
		return true, nil
	}
	concurrent := func(ctx context.Context, batch []consumer.Message) (bool, error) {
		var wg sync.WaitGroup
		var failed atomic.Bool
		for range batch {
			wg.Go(func() {
				if simulatedIO(ctx) != nil {
					failed.Store(true)
				}
			})
		}
		wg.Wait()
		return !failed.Load(), nil
	}
	seq, err := measureConsumer(ctx, cluster.ListenAddrs(), "sequential", 1, sequential)
	if err != nil {
		fail(fmt.Errorf("sequential: %w", err))
	}
	bat, err := measureConsumer(ctx, cluster.ListenAddrs(), "batched", 20, concurrent)
	if err != nil {
		fail(fmt.Errorf("batches of 20: %w", err))
	}
	row := newTable("consumer", runCommand(), figureWidths, "", "sequential", "batches of 20", "batches vs sequential").row
	row(fmt.Sprintf("messages/s, %d messages, %v I/O each", consumerBenchMessages, consumerBenchIO),
		fmt.Sprintf("%.0f", seq), fmt.Sprintf("%.0f", bat), fmt.Sprintf("%.1fx the throughput (goal: 10x)", bat/seq))
	fmt.Println("  sequential: batch size 1, one message at a time; batches of 20: the handler runs the 20 concurrently")
}

// simulatedIO stands for 10 ms of waiting on a network or a disk.
func simulatedIO(ctx context.Context) error { return backoff.Sleep(ctx, consumerBenchIO) }

func produceConsumerBench(ctx context.Context, brokers []string) error {
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.RecordPartitioner(kgo.RoundRobinPartitioner()))
	if err != nil {
		return err
	}
	defer cl.Close()
	recs := make([]*kgo.Record, consumerBenchMessages)
	for i := range recs {
		recs[i] = &kgo.Record{Topic: "bench", Value: fmt.Appendf(nil, `{"order":%d}`, i)}
	}
	return cl.ProduceSync(ctx, recs...).FirstErr()
}

// measureConsumer consumes every message in a group of its own and returns
// messages/s from the first batch handed over to the last one handled, so
// that joining the group does not count.
func measureConsumer(ctx context.Context, brokers []string, group string, batchSize int, h consumer.Handler) (float64, error) {
	var handled atomic.Int64
	var first atomic.Int64 // unix nanoseconds of the first delivery
	done := make(chan struct{})
	c, err := consumer.New(consumer.Config{
		Brokers:      brokers,
		Topic:        "bench",
		Group:        group,
		BatchSize:    batchSize,
		BatchTimeout: 100 * time.Millisecond,
		Logger:       slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})),
	}, func(ctx context.Context, batch []consumer.Message) (bool, error) {
		first.CompareAndSwap(0, time.Now().UnixNano())
		ok, err := h(ctx, batch)
		if ok && err == nil && handled.Add(int64(len(batch))) == consumerBenchMessages {
			close(done)
		}
		return ok, err
	})
	if err != nil {
		return 0, err
	}
	ran := make(chan error, 1)
	go func() { ran <- c.Run(ctx) }()
	select {
	case <-done:
	case err := <-ran:
		return 0, fmt.Errorf("the consumer stopped: %v", err)
	case <-time.After(2 * time.Minute):
		return 0, fmt.Errorf("only %d of %d messages handled after two minutes", handled.Load(), consumerBenchMessages)
	}
	took := time.Since(time.Unix(0, first.Load()))
	sctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := c.Shutdown(sctx); err != nil {
		return 0, err
	}
	if err := <-ran; err != nil {
		return 0, err
	}
	return consumerBenchMessages / took.Seconds(), nil
}
