package consumer_test

import (
	"context"
	"fmt"
	"log"
	"slices"
	"sync"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/spool-run/spool/consumer"
)

// A consumer of a topic on an in-process Kafka cluster: three messages
// come in one batch, the handler prints them and commits, and Shutdown
// stops the consumer.
func Example() {
	cluster, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, "orders"))
	if err != nil {
		log.Fatal(err)
	}
	defer cluster.Close()

	producer, err := kgo.NewClient(kgo.SeedBrokers(cluster.ListenAddrs()...))
	if err != nil {
		log.Fatal(err)
	}
	defer producer.Close()
	ctx := context.Background()
	for _, v := range []string{"apple", "bread", "cheese"} {
		if err := producer.ProduceSync(ctx, &kgo.Record{Topic: "orders", Value: []byte(v)}).FirstErr(); err != nil {
			log.Fatal(err)
		}
	}

	done := make(chan struct{})
	c, err := consumer.New(consumer.Config{
		Brokers:   cluster.ListenAddrs(),
		Topic:     "orders",
		Group:     "shipping",
		BatchSize: 3,
	}, func(ctx context.Context, batch []consumer.Message) (bool, error) {
		fmt.Printf("a batch of %d from partition %d\n", len(batch), batch[0].Partition)
		for _, m := range batch {
			fmt.Printf("  %d: %s\n", m.Offset, m.Value)
		}
		close(done)
		return true, nil // done: commit the batch
	})
	if err != nil {
		log.Fatal(err)
	}
	stopped := make(chan error, 1)
	go func() { stopped <- c.Run(ctx) }()

	<-done
	if err := c.Shutdown(ctx); err != nil {
		log.Fatal(err)
	}
	if err := <-stopped; err != nil {
		log.Fatal(err)
	}
	// Output:
	// a batch of 3 from partition 0
	//   0: apple
	//   1: bread
	//   2: cheese
}

// One consumer of two topics: each batch is of one partition of one
// topic, and Message.Topic says which. TopicRegex ("orders|returns")
// would do the same, and also consume topics created later.
func Example_severalTopics() {
	cluster, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, "orders", "returns", "audit"))
	if err != nil {
		log.Fatal(err)
	}
	defer cluster.Close()
	producer, err := kgo.NewClient(kgo.SeedBrokers(cluster.ListenAddrs()...))
	if err != nil {
		log.Fatal(err)
	}
	defer producer.Close()
	ctx := context.Background()
	for _, r := range []*kgo.Record{
		{Topic: "orders", Value: []byte("apple")},
		{Topic: "returns", Value: []byte("bread")},
		{Topic: "audit", Value: []byte("not read")},
	} {
		if err := producer.ProduceSync(ctx, r).FirstErr(); err != nil {
			log.Fatal(err)
		}
	}

	var (
		mu   sync.Mutex
		seen []string
		both = make(chan struct{})
	)
	c, err := consumer.New(consumer.Config{
		Brokers: cluster.ListenAddrs(),
		Topics:  []string{"orders", "returns"},
		Group:   "shipping",
	}, func(ctx context.Context, batch []consumer.Message) (bool, error) {
		mu.Lock()
		defer mu.Unlock()
		for _, m := range batch {
			seen = append(seen, fmt.Sprintf("%s/%d@%d: %s", m.Topic, m.Partition, m.Offset, m.Value))
		}
		if len(seen) == 2 {
			close(both)
		}
		return true, nil
	})
	if err != nil {
		log.Fatal(err)
	}
	stopped := make(chan error, 1)
	go func() { stopped <- c.Run(ctx) }()
	<-both
	if err := c.Shutdown(ctx); err != nil {
		log.Fatal(err)
	}
	if err := <-stopped; err != nil {
		log.Fatal(err)
	}
	slices.Sort(seen) // the two topics' partitions are handled concurrently
	for _, s := range seen {
		fmt.Println(s)
	}
	// Output:
	// orders/0@0: apple
	// returns/0@0: bread
}

func ExampleParseEventHubsConnectionString() {
	eh, err := consumer.ParseEventHubsConnectionString(
		"Endpoint=sb://mynamespace.servicebus.windows.net/;SharedAccessKeyName=RootManageSharedAccessKey;SharedAccessKey=abc=;EntityPath=myhub")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(eh.Namespace)
	fmt.Println(eh.Broker)
	fmt.Println(eh.EventHub)
	// Output:
	// mynamespace.servicebus.windows.net
	// mynamespace.servicebus.windows.net:9093
	// myhub
}

// A consumer of an event hub: the connection string gives the broker, the
// credentials, TLS and the topic. The handler hands batches it cannot
// process to a dead-letter event hub through the consumer's own client.
func Example_eventHubs() {
	var c *consumer.Consumer
	c, err := consumer.New(consumer.Config{
		EventHubsConnectionString: "Endpoint=sb://mynamespace.servicebus.windows.net/;SharedAccessKeyName=listen;SharedAccessKey=abc=;EntityPath=orders",
		Group:                     "$Default",
	}, func(ctx context.Context, batch []consumer.Message) (bool, error) {
		for _, m := range batch {
			if err := process(m); err != nil {
				rec := &kgo.Record{Topic: "orders-dead", Key: m.Key, Value: m.Value}
				if err := c.Client().ProduceSync(ctx, rec).FirstErr(); err != nil {
					return false, err // not done: the batch comes again
				}
			}
		}
		return true, nil
	})
	if err != nil {
		log.Fatal(err)
	}
	_ = c // c.Run(ctx) consumes until c.Shutdown(ctx)
}

func process(consumer.Message) error { return nil }
