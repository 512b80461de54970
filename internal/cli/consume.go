package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/spool-run/spool/consumer"
	"github.com/spool-run/spool/internal/config"
	"github.com/spool-run/spool/internal/msgjobs"
)

// consumeFlags are `spool consume`'s own flags; the job's flags are
// submitFlags.
type consumeFlags struct {
	brokers, topics                    []string
	topicRegex                         string
	group, saslPlain, tlsCA, eventHubs string
	instanceID                         string
	deadLetter, startAt                string
	batchSize                          int
	batchTimeout, sessionTimeout       time.Duration
	tls, noCommit                      bool
	metricsAddr, logLevel, logFormat   string
}

func newConsumeCmd(e *env) *cobra.Command {
	var (
		cfg             consumeConfig
		job, secrets, f = &cfg.job, &cfg.secrets, &cfg.f
	)
	cmd := &cobra.Command{
		Use:   "consume --brokers HOSTS --topic T --group G [flags] [-- COMMAND [ARG...]]",
		Short: "Turn the messages of Kafka topics (or an Event Hubs event hub) into jobs, one per message",
		Long: `Consume Kafka topics and submit one job per message.

Give the topic with --topic; repeat it (or separate names with commas) to
consume several, or give --topic-regex to consume every topic whose whole
name matches, including topics created later (checked every 30s).

Without COMMAND, each message is a job spec, a JSON object with the fields of
spool submit:

  {"argv": ["make", "test"]}    or    {"shell": "make test && make lint"}
  plus "env" {...}, "dir", "queue", "timeout" ("10m" or seconds),
  "max_attempts", "retries", "repo", "ref", "stdin", and "secrets": the
  names of the --secret values of spool consume that the job gets
  (["DEPLOY_TOKEN"]; a message never carries a secret's value)

With COMMAND, each message runs COMMAND with the message's value on stdin,
and every --secret.
Every job has $SPOOL_MESSAGE_TOPIC, $SPOOL_MESSAGE_PARTITION,
$SPOOL_MESSAGE_OFFSET, $SPOOL_MESSAGE_TIMESTAMP and $SPOOL_MESSAGE_KEY (or
$SPOOL_MESSAGE_KEY_BASE64 for a key that is not text).

A job's request id comes from its message's topic, partition and offset, so a
message delivered again never makes a second job. A batch of messages is
committed only after all its jobs are stored. A message that cannot become a
job goes to --dead-letter-topic, or else is recorded as a failed job that
carries the message and the reason: nothing is dropped, nothing stalls.

For Azure Event Hubs, give --eventhubs-connection-string (or set
SPOOL_EVENTHUBS_CONNECTION_STRING): it sets the broker, the topic, SASL PLAIN
and TLS. The Kafka endpoint needs the Standard tier or above. The emulator's
string (Endpoint=sb://localhost;...;UseDevelopmentEmulator=true) connects to
its Kafka port, 9092, with SASL PLAIN and without TLS.

--no-commit turns messages into jobs and never commits their offsets: for a
replay, or a dry run against a test server. The group's offsets stay where
they were. (Against the same server, a message that already made a job finds
that job, by its request id, rather than making a second one.)

SIGTERM or Ctrl-C stops gracefully: no more fetching, the messages already
fetched become jobs, their offsets are committed, the consumer leaves its
group, and spool consume exits 0. A second signal stops at once.

With --instance-id the consumer is a static member of its group: restarted
within --session-timeout under the same id, it gets its partitions back and
the other consumers are not rebalanced. It does not leave the group when it
stops, so its partitions wait for it until the session times out. Give each
consumer its own id: a second one with the same id fences the first, which
exits with an error saying so.`,
		Example: `  spool consume --brokers kafka:9092 --topic jobs --group spool
  spool consume --brokers kafka:9092 --topic jobs --topic urgent-jobs --group spool
  spool consume --brokers kafka:9092 --topic-regex 'jobs-.*' --group spool
  spool consume --brokers kafka:9092 --topic uploads --group thumbs -q images -- ./thumbnail.sh
  SPOOL_EVENTHUBS_CONNECTION_STRING='Endpoint=sb://ns.servicebus.windows.net/;...;EntityPath=jobs' \
      spool consume --group spool`,
		RunE: func(cmd *cobra.Command, args []string) error {
			cfg.argv, cfg.given = args, givenFlags(cmd)
			return runConsume(cmd.Context(), cfg, e)
		},
	}
	job.register(cmd)
	secrets.register(cmd)
	_ = cmd.Flags().MarkHidden("request-id") // each job's request id comes from its message
	fl := cmd.Flags()
	fl.StringSliceVar(&f.brokers, "brokers", nil, "Kafka brokers, host:port, comma-separated")
	fl.StringSliceVar(&f.topics, "topic", nil, "topic to consume; repeat it, or separate names with commas, for several")
	fl.StringVar(&f.topicRegex, "topic-regex", "", "consume every topic whose whole name matches this regular expression (Go syntax), also those created later")
	fl.StringVar(&f.group, "group", "spool", "consumer group: consumers of one group share the topic's partitions and offsets")
	fl.IntVar(&f.batchSize, "batch-size", 20, "at most this many messages a batch, committed together")
	fl.DurationVar(&f.batchTimeout, "batch-timeout", time.Second, "a partial batch is handled this long after its first message arrived")
	fl.StringVar(&f.saslPlain, "sasl-plain", "", "SASL PLAIN credentials, USER:PASS (or set SPOOL_KAFKA_SASL_PLAIN, which others cannot see in ps)")
	fl.BoolVar(&f.tls, "tls", false, "connect to the brokers with TLS")
	fl.StringVar(&f.tlsCA, "tls-ca", "", "CA certificate (PEM) to trust for the brokers' TLS instead of the system's (implies --tls)")
	fl.StringVar(&f.eventHubs, "eventhubs-connection-string", "", "consume an Azure Event Hubs event hub through its Kafka endpoint (or set SPOOL_EVENTHUBS_CONNECTION_STRING)")
	fl.StringVar(&f.deadLetter, "dead-letter-topic", "", "send messages that cannot become jobs to this topic (default: record each as a failed job)")
	fl.BoolVar(&f.noCommit, "no-commit", false, "never commit offsets (a replay or a dry run): the group's next consumer reads the same messages again")
	enumVar(fl, &f.startAt, "start-at", "earliest", "where a new group starts: earliest (the oldest message kept) or latest (new messages only)", "earliest", "latest")
	fl.StringVar(&f.instanceID, "instance-id", "", "a static member's id, its own for each consumer (a pod's or host's name): restarted within --session-timeout, it gets its partitions back without rebalancing the others")
	fl.DurationVar(&f.sessionTimeout, "session-timeout", 45*time.Second, "how long the group waits for a consumer that stopped answering (crashed) before giving its partitions to another")
	fl.StringVar(&f.metricsAddr, "metrics-addr", "", "serve Prometheus metrics on this address (for example 127.0.0.1:9465)")
	logFlags(fl, &f.logLevel, &f.logFormat)
	return cmd
}

// consumeConfig is what `spool consume` is told on its command line: the
// job's flags (for a COMMAND), the secrets, the consumer's flags.
type consumeConfig struct {
	argv    []string
	job     submitFlags
	secrets secretFlags
	f       consumeFlags
	given   map[string]bool // the flags given
}

// runConsume turns messages into jobs until a signal stops it.
func runConsume(ctx context.Context, cfg consumeConfig, e *env) error {
	conf, err := cfg.f.consumerConfig()
	if err != nil {
		return err
	}
	jc, err := cfg.f.jobs(&cfg.job, cfg.secrets, cfg.given, cfg.argv)
	if err != nil {
		return err
	}
	c, err := e.client()
	if err != nil {
		return err
	}
	jc.Client = c
	log := config.Log{Level: cfg.f.logLevel, Format: cfg.f.logFormat}.NewLogger(e.errOut)
	conf.Logger, jc.Logger = log, log
	if cfg.f.metricsAddr != "" {
		m, err := serveMetrics(ctx, cfg.f.metricsAddr, log)
		if err != nil {
			return err
		}
		conf.Meters = m.Provider()
	}
	var dlq *consumer.Consumer
	if cfg.f.deadLetter != "" {
		jc.DeadLetter = func(ctx context.Context, m consumer.Message, reason string) error {
			return msgjobs.DeadLetterTo(dlq.Client(), cfg.f.deadLetter)(ctx, m, reason)
		}
	}
	cons, err := consumer.New(conf, msgjobs.Handler(jc))
	if err != nil {
		return flagError(err)
	}
	if cfg.f.deadLetter != "" && cons.Consumes(cfg.f.deadLetter) {
		_ = cons.Shutdown(ctx)
		return fmt.Errorf("--dead-letter-topic %s is also consumed (by --topic or --topic-regex): what is sent there would come back; give a topic outside them", cfg.f.deadLetter)
	}
	dlq = cons
	return runConsumer(ctx, cons, log.Info, log.Warn)
}

// consumerConfig is the consumer's config from the flags and environment.
func (f *consumeFlags) consumerConfig() (consumer.Config, error) {
	cfg := consumer.Config{Brokers: f.brokers, TopicRegex: f.topicRegex, Group: f.group, BatchSize: f.batchSize, BatchTimeout: f.batchTimeout,
		TLS: f.tls, TLSCAFile: f.tlsCA, EventHubsConnectionString: f.eventHubs, SessionTimeout: f.sessionTimeout,
		NoCommit: f.noCommit, InstanceID: f.instanceID}
	if len(f.topics) > 0 && f.topicRegex != "" {
		return cfg, errors.New("--topic and --topic-regex: give one or the other")
	}
	switch len(f.topics) {
	case 0:
	case 1:
		cfg.Topic = f.topics[0]
	default:
		cfg.Topics = f.topics
	}
	if cfg.EventHubsConnectionString == "" {
		cfg.EventHubsConnectionString = strings.TrimSpace(os.Getenv("SPOOL_EVENTHUBS_CONNECTION_STRING"))
	}
	cfg.StartAtLatest = f.startAt == "latest"
	if f.batchSize < 1 {
		return cfg, fmt.Errorf("--batch-size must be at least 1, got %d", f.batchSize)
	}
	if f.batchTimeout <= 0 {
		return cfg, fmt.Errorf("--batch-timeout must be positive, got %s", f.batchTimeout)
	}
	plain := f.saslPlain
	if plain == "" {
		plain = os.Getenv("SPOOL_KAFKA_SASL_PLAIN")
	}
	if plain != "" {
		user, pass, ok := strings.Cut(plain, ":")
		if !ok || user == "" {
			return cfg, errors.New("--sasl-plain: use USER:PASS")
		}
		cfg.SASLPlain = &consumer.PlainAuth{User: user, Password: pass}
	}
	if len(cfg.Brokers) == 0 && cfg.EventHubsConnectionString == "" {
		return cfg, errors.New("say where to consume from: --brokers HOST:PORT --topic T (or --topic-regex RE), or --eventhubs-connection-string")
	}
	return cfg, nil
}

// jobs is how messages become jobs: with a command, the job flags make
// its job; without one, they must not be given (each message says).
func (f *consumeFlags) jobs(job *submitFlags, secrets secretFlags, given map[string]bool, args []string) (msgjobs.Config, error) {
	if given["request-id"] {
		return msgjobs.Config{}, errors.New("--request-id: each job's request id comes from its message's topic, partition and offset")
	}
	held, err := secrets.secrets(os.LookupEnv)
	if err != nil {
		return msgjobs.Config{}, err
	}
	if len(args) == 0 && job.script == "" {
		for _, name := range []string{"env", "workdir", "timeout", "retries", "max-attempts", "repo", "ref"} {
			if given[name] {
				return msgjobs.Config{}, fmt.Errorf("--%s applies to a COMMAND given after --; without one, each message is a job spec that says it", name)
			}
		}
		return msgjobs.Config{Queue: job.queue, Secrets: held}, nil
	}
	sub, err := job.submission(args)
	if err != nil {
		return msgjobs.Config{}, err
	}
	sub.Secrets = held
	return msgjobs.Config{Command: sub, Queue: job.queue}, nil
}

// flagError names the flag behind a consumer config error.
func flagError(err error) error {
	if !errors.Is(err, consumer.ErrInvalidConfig) {
		return err
	}
	return fmt.Errorf("%w (see spool consume --help)", err)
}

// runConsumer runs c until a signal: the first SIGTERM or Ctrl-C stops it
// gracefully, a second at once. It counts the signals itself: the
// command's context ends at the first one, which must not stop the
// consumer at once.
func runConsumer(ctx context.Context, c *consumer.Consumer, info, warn func(string, ...any)) error {
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(sigs)
	runCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	defer cancel()
	stopCtx, force := context.WithCancel(context.Background())
	defer force()
	go func() {
		select {
		case <-sigs:
		case <-runCtx.Done():
			return
		}
		info("stopping gracefully: handling the messages already fetched; signal again to stop now")
		go func() {
			select {
			case <-sigs:
				warn("stopping now")
				force()
			case <-runCtx.Done():
			}
		}()
		_ = c.Shutdown(stopCtx)
	}()
	err := c.Run(runCtx)
	if err != nil && stopCtx.Err() != nil {
		return fmt.Errorf("stopped at once on a second signal: %w", err)
	}
	return err
}
