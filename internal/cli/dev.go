package cli

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"golang.org/x/term"

	"github.com/spool-run/spool/internal/setting"
)

// devBrokerPort is where `spool dev kafka` listens unless told otherwise:
// Kafka's own port, so that the commands people copy from Kafka's
// documentation reach it.
const devBrokerPort = 9092

func newDevCmd(e *env) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "dev",
		Short: "Stand-ins for trying spool on one machine (for development only)",
		Long: `Stand-ins for the systems spool talks to, so that what needs them can be
tried on one machine. They are for development only: they keep nothing, check
no one, and are not the real thing.`,
		Args: cobra.NoArgs,
	}
	cmd.AddCommand(newDevKafkaCmd(e))
	return cmd
}

// devKafkaConfig is what `spool dev kafka` is told on its command line.
type devKafkaConfig struct {
	port       int
	topics     []string
	partitions int
}

func newDevKafkaCmd(e *env) *cobra.Command {
	var cfg devKafkaConfig
	cmd := &cobra.Command{
		Use:   "kafka [--port 9092] [--topic jobs]",
		Short: "Run a Kafka-compatible broker in this process, to try spool consume (development only)",
		Long: `Run a Kafka-compatible broker (franz-go's kfake) in this process, on
127.0.0.1, with the topic "jobs" (or those of --topic), until Ctrl-C or
SIGTERM: enough to try spool consume without a Kafka cluster.

FOR DEVELOPMENT ONLY. It keeps messages in memory (they are gone when it
stops), asks no one for credentials (every program on this machine may read
and write it), and is a test double of Kafka, not Kafka.

Other topics are made on first use (produce to one, or name it in
--dead-letter-topic), with --partitions partitions.
spool dev kafka produce sends it messages.`,
		Example: `  spool dev kafka
  spool consume --brokers 127.0.0.1:9092 --topic jobs     # in another terminal
  spool dev kafka produce '{"argv": ["echo", "hello"]}'   # in a third`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runDevKafka(cmd.Context(), cfg, e)
		},
	}
	fl := cmd.Flags()
	fl.IntVar(&cfg.port, "port", devBrokerPort, "port to listen on, on 127.0.0.1 (0: any free port)")
	fl.StringSliceVar(&cfg.topics, "topic", []string{"jobs"}, "topics to make at start; repeat it, or separate names with commas, for several")
	fl.IntVar(&cfg.partitions, "partitions", 1, "partitions of each topic")
	cmd.AddCommand(newDevProduceCmd(e))
	return cmd
}

// runDevKafka runs the broker until ctx ends.
func runDevKafka(ctx context.Context, cfg devKafkaConfig, e *env) error {
	if cfg.port < 0 || cfg.port > 65535 {
		return fmt.Errorf("--port %d: use a port from 1 to 65535, or 0 for any free one", cfg.port)
	}
	if cfg.partitions < 1 {
		return fmt.Errorf("--partitions must be at least 1, got %d", cfg.partitions)
	}
	for _, t := range cfg.topics {
		if t == "" {
			return errors.New("--topic: a topic needs a name")
		}
	}
	port := strconv.Itoa(cfg.port)
	cluster, err := kfake.NewCluster(
		kfake.Ports(cfg.port),
		kfake.SeedTopics(int32(cfg.partitions), cfg.topics...),
		kfake.AllowAutoTopicCreation(),
		kfake.DefaultNumPartitions(cfg.partitions),
		// kfake always listens on loopback; the port is the person's to
		// choose, and a port taken is theirs to hear about by its flag.
		kfake.ListenFn(func(network, addr string) (net.Listener, error) {
			ln, err := net.Listen(network, addr)
			if err != nil {
				return nil, setting.Listen("--port", port, err)
			}
			return ln, nil
		}),
	)
	if err != nil {
		return err
	}
	defer cluster.Close()
	addr := cluster.ListenAddrs()[0]
	plural := "s"
	if cfg.partitions == 1 {
		plural = ""
	}
	fmt.Fprintf(e.out, `spool dev kafka: a Kafka-compatible broker at %s, topic %s (%d partition%s each)
  FOR DEVELOPMENT ONLY: messages are kept in memory and lost when it stops; no credentials are asked
try it, each in a terminal of its own, all in one directory:
  spool server
  spool worker
  spool consume --brokers %s --topic %s
  spool dev kafka produce --brokers %s --topic %s '{"argv": ["echo", "hello from Kafka"]}'
Ctrl-C stops the broker.
`, addr, strings.Join(cfg.topics, ", "), cfg.partitions, plural, addr, cfg.topics[0], addr, cfg.topics[0])
	<-ctx.Done()
	fmt.Fprintln(e.out, "spool dev kafka: stopped; its messages are gone")
	return nil
}

// devProduceConfig is what `spool dev kafka produce` is told on its
// command line.
type devProduceConfig struct {
	brokers  []string
	topic    string
	key      string
	messages []string
}

func newDevProduceCmd(e *env) *cobra.Command {
	var cfg devProduceConfig
	cmd := &cobra.Command{
		Use:   "produce [--brokers 127.0.0.1:9092] [--topic jobs] [MESSAGE...]",
		Short: "Send messages to a Kafka topic: each argument, or else each line of stdin (development only)",
		Long: `Send messages to a topic of spool dev kafka (or of any Kafka broker that
takes them without TLS or credentials): each MESSAGE given, or, with none,
each line of stdin that is not empty. It prints where each one went,
TOPIC/PARTITION@OFFSET; the job spool consume makes of a message finds the
same in $SPOOL_MESSAGE_TOPIC, $SPOOL_MESSAGE_PARTITION and
$SPOOL_MESSAGE_OFFSET.`,
		Example: `  spool dev kafka produce '{"argv": ["echo", "hello"]}'
  spool dev kafka produce --topic jobs < examples/kafka-jobs.jsonl
  spool dev kafka produce --topic uploads --key cat.png 'https://example.com/cat.png'`,
		RunE: func(cmd *cobra.Command, args []string) error {
			cfg.messages = args
			return runDevProduce(cmd.Context(), cfg, e)
		},
	}
	fl := cmd.Flags()
	fl.StringSliceVar(&cfg.brokers, "brokers", []string{"127.0.0.1:" + strconv.Itoa(devBrokerPort)}, "Kafka brokers, host:port, comma-separated")
	fl.StringVar(&cfg.topic, "topic", "jobs", "topic to send to (made on first use by spool dev kafka)")
	fl.StringVar(&cfg.key, "key", "", "key of every message (jobs see it as $SPOOL_MESSAGE_KEY)")
	return cmd
}

// produceChunk is how many messages of stdin are sent at once: enough for
// a file of job specs to go in one round trip, few enough that a long
// stream is not held in memory.
const produceChunk = 500

// maxMessageBytes is the longest line of stdin taken as a message: a
// Kafka broker's default limit on a message.
const maxMessageBytes = 1 << 20

// runDevProduce sends cfg.messages, or the lines of stdin, to cfg.topic.
func runDevProduce(ctx context.Context, cfg devProduceConfig, e *env) error {
	if cfg.topic == "" {
		return errors.New("--topic: say which topic to send to")
	}
	brokers := strings.Join(cfg.brokers, ",")
	cl, err := kgo.NewClient(kgo.SeedBrokers(cfg.brokers...), kgo.DefaultProduceTopic(cfg.topic),
		kgo.AllowAutoTopicCreation(), kgo.RecordDeliveryTimeout(10*time.Second))
	if err != nil {
		return fmt.Errorf("--brokers %s: %w", brokers, err)
	}
	defer cl.Close()
	pingCtx, cancel := context.WithTimeout(ctx, 5*time.Second)
	err = cl.Ping(pingCtx)
	cancel()
	if err != nil {
		return fmt.Errorf("no Kafka broker answers at %s (%v): start one with `spool dev kafka`, or give --brokers", brokers, err)
	}
	send := func(values []string) error {
		if len(values) == 0 {
			return nil
		}
		recs := make([]*kgo.Record, len(values))
		for i, v := range values {
			recs[i] = &kgo.Record{Value: []byte(v)}
			if cfg.key != "" {
				recs[i].Key = []byte(cfg.key)
			}
		}
		results := cl.ProduceSync(ctx, recs...)
		for _, r := range results {
			if r.Err != nil {
				return fmt.Errorf("sending to %s at %s: %w", cfg.topic, brokers, r.Err)
			}
			fmt.Fprintf(e.out, "%s/%d@%d\n", r.Record.Topic, r.Record.Partition, r.Record.Offset)
		}
		return nil
	}
	if len(cfg.messages) > 0 {
		return send(cfg.messages)
	}
	chunk := produceChunk
	if f, ok := e.in.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		// Someone typing sees each message go as they end its line.
		chunk = 1
		fmt.Fprintln(e.errOut, "spool: type the messages, one a line; Ctrl-D ends")
	}
	sc := bufio.NewScanner(e.in)
	sc.Buffer(make([]byte, 64*1024), maxMessageBytes)
	var batch []string
	sent := 0
	for sc.Scan() {
		if strings.TrimSpace(sc.Text()) == "" {
			continue
		}
		batch = append(batch, sc.Text())
		if len(batch) == chunk {
			if err := send(batch); err != nil {
				return err
			}
			sent += len(batch)
			batch = batch[:0]
		}
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return fmt.Errorf("a line of stdin is longer than %d bytes, a Kafka broker's usual limit on a message", maxMessageBytes)
		}
		return fmt.Errorf("reading stdin: %w", err)
	}
	if sent+len(batch) == 0 {
		return errors.New("nothing to send: give the messages as arguments, or as lines on stdin")
	}
	return send(batch)
}
