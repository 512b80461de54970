package consumer

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"regexp"
	"strings"
	"time"

	"go.opentelemetry.io/otel/metric"
)

// ErrInvalidConfig is wrapped by every error New and
// ParseEventHubsConnectionString return for a configuration that cannot
// work, so callers can tell a mistake in the settings (fix and redeploy)
// from a failure at run time (retry).
var ErrInvalidConfig = errors.New("consumer: invalid config")

// Defaults for the zero values of Config.
const (
	defaultBatchSize       = 20
	defaultBatchTimeout    = time.Second
	defaultRetryBackoff    = 100 * time.Millisecond
	defaultMaxRetryBackoff = 10 * time.Second
	defaultTopicRefresh    = 30 * time.Second
)

// Config says where to consume from and how to batch.
type Config struct {
	// Brokers are the host:port of the seed brokers.
	Brokers []string
	// Topic is the topic to consume. Give exactly one of Topic, Topics
	// and TopicRegex (or none with an Event Hubs connection string that
	// has an EntityPath).
	Topic string
	// Topics are several topics to consume with one handler. A batch is
	// still of one partition of one topic (Message.Topic says which);
	// the group shares out the partitions of them all.
	Topics []string
	// TopicRegex consumes every topic whose whole name matches this
	// regular expression (Go's syntax), such as `orders-.*`. Topics
	// created later are picked up within TopicRefresh; internal topics
	// (__consumer_offsets) never match.
	TopicRegex string
	// TopicRefresh is how often the brokers' list of topics is read for
	// new ones that match TopicRegex (0: 30s). Unused without TopicRegex.
	TopicRefresh time.Duration
	// Group is the consumer group. Every consumer of a group shares the
	// topics' partitions and their committed offsets.
	Group string

	// BatchSize is the most messages a batch holds (0: 20).
	BatchSize int
	// BatchTimeout is how long a partial batch waits for more messages,
	// counted from the first message waiting in it (0: 1s).
	BatchTimeout time.Duration

	// SASLPlain authenticates with SASL PLAIN (nil: no SASL).
	SASLPlain *PlainAuth
	// TLS connects with TLS, trusting the system roots unless TLSCAFile
	// says otherwise.
	TLS bool
	// TLSCAFile is a PEM file of the CA certificates to trust instead of
	// the system roots. Setting it implies TLS.
	TLSCAFile string

	// EventHubsConnectionString connects to an Azure Event Hubs namespace
	// through its Kafka endpoint: SASL PLAIN with the user
	// "$ConnectionString" and the whole string as the password, TLS, the
	// broker <Endpoint host>:9093 and the topic from EntityPath. Brokers,
	// Topic and TLSCAFile, when set, override what it implies. A string
	// with UseDevelopmentEmulator=true is for the local emulator: the
	// broker is <Endpoint host>:9092, without TLS (unless TLS or
	// TLSCAFile asks for it).
	EventHubsConnectionString string

	// NoCommit handles batches and never commits them, for replays and
	// dry runs: the group's committed offsets stay as they are, so the
	// next consumer of the group (or this one, restarted) reads the same
	// messages again. The handler's answer keeps its meaning within the
	// run: true moves on to the partition's next batch, false or an
	// error delivers the same batch again.
	NoCommit bool

	// StartAtLatest makes a group that has no committed offset for a
	// partition start at the messages produced from now on. By default it
	// starts at the oldest message the broker still keeps.
	StartAtLatest bool

	// SessionTimeout is how long the group waits for a member that stopped
	// answering (it crashed, or its network went) before its partitions go
	// to the others (0: 45s, Kafka's default). A member that stops
	// gracefully leaves at once and is not waited for. The broker bounds
	// it (group.min.session.timeout.ms, 6s by default).
	SessionTimeout time.Duration

	// InstanceID makes the consumer a static member of its group (KIP-345):
	// one restarted within SessionTimeout with the same InstanceID gets
	// its partitions back, and the other members are not rebalanced. The
	// price: a static member that stops, even gracefully, does not leave
	// the group, so its partitions wait SessionTimeout for it before they
	// go to the others; set SessionTimeout to more than a restart takes.
	// Each running consumer needs its own InstanceID (a pod's name, a
	// host's name): one that joins with an InstanceID already in use
	// fences the other, whose Run then returns an error that says so.
	// Empty: a dynamic member, rebalanced on every join and leave.
	InstanceID string

	// RetryBackoff is the first pause before a refused batch is delivered
	// again (0: 100ms). Each further refusal doubles it, with jitter, up
	// to MaxRetryBackoff (0: 10s).
	RetryBackoff    time.Duration
	MaxRetryBackoff time.Duration

	// Logger receives the consumer's structured logs (nil: discarded).
	Logger *slog.Logger
	// Meters makes the consumer's metrics (nil: none): the meter
	// "spool/consumer" records what the package doc lists.
	Meters metric.MeterProvider
}

// PlainAuth is a SASL PLAIN user and password.
type PlainAuth struct {
	User, Password string
}

// settings is a Config checked and completed with its defaults and with
// what an Event Hubs connection string implies.
type settings struct {
	brokers                       []string
	topics                        []string       // the topics, unless regex is set
	regex                         *regexp.Regexp // anchored: the whole name must match
	topicRefresh                  time.Duration
	group                         string
	batchSize                     int
	batchTimeout                  time.Duration
	retryBackoff, maxRetryBackoff time.Duration
	startAtLatest, noCommit       bool
	sessionTimeout                time.Duration
	instanceID                    string
	user, password                string // SASL PLAIN when user is not empty
	tls                           *tls.Config
	log                           *slog.Logger
	meters                        metric.MeterProvider
}

func invalid(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrInvalidConfig}, args...)...)
}

// check validates cfg and fills in the defaults. Each error names the field
// at fault so that a wrong deployment says what to fix.
func (cfg Config) check() (*settings, error) {
	s := &settings{
		brokers:        cfg.Brokers,
		group:          cfg.Group,
		batchSize:      cfg.BatchSize,
		batchTimeout:   cfg.BatchTimeout,
		startAtLatest:  cfg.StartAtLatest,
		noCommit:       cfg.NoCommit,
		sessionTimeout: cfg.SessionTimeout,
		instanceID:     cfg.InstanceID,
		log:            cfg.Logger,
		meters:         cfg.Meters,
	}
	if err := s.checkTopics(cfg); err != nil {
		return nil, err
	}
	useTLS := cfg.TLS || cfg.TLSCAFile != ""
	if cfg.EventHubsConnectionString != "" {
		if cfg.SASLPlain != nil {
			return nil, invalid("SASLPlain and EventHubsConnectionString are exclusive: the connection string is the SASL password")
		}
		eh, err := ParseEventHubsConnectionString(cfg.EventHubsConnectionString)
		if err != nil {
			return nil, err
		}
		if len(s.brokers) == 0 {
			s.brokers = []string{eh.Broker}
		}
		if err := s.eventHubsTopic(eh); err != nil {
			return nil, err
		}
		s.user, s.password = eventHubsUser, cfg.EventHubsConnectionString
		// The emulator's Kafka endpoint speaks plain TCP; Azure's
		// only TLS.
		useTLS = useTLS || !eh.Emulator
	}
	if cfg.SASLPlain != nil {
		if cfg.SASLPlain.User == "" {
			return nil, invalid("SASLPlain.User is empty")
		}
		s.user, s.password = cfg.SASLPlain.User, cfg.SASLPlain.Password
	}

	if len(s.brokers) == 0 {
		return nil, invalid("Brokers is empty: give at least one host:port")
	}
	for i, b := range s.brokers {
		if strings.TrimSpace(b) == "" {
			return nil, invalid("Brokers[%d] is empty", i)
		}
	}
	if len(s.topics) == 0 && s.regex == nil {
		if cfg.EventHubsConnectionString != "" {
			return nil, invalid("Topic is empty and the Event Hubs connection string has no EntityPath: set one of them")
		}
		return nil, invalid("Topic is empty: give Topic, Topics or TopicRegex")
	}
	if s.group == "" {
		return nil, invalid("Group is empty")
	}

	switch {
	case s.batchSize < 0:
		return nil, invalid("BatchSize is negative (%d)", s.batchSize)
	case s.batchSize == 0:
		s.batchSize = defaultBatchSize
	}
	switch {
	case s.batchTimeout < 0:
		return nil, invalid("BatchTimeout is negative (%v)", s.batchTimeout)
	case s.batchTimeout == 0:
		s.batchTimeout = defaultBatchTimeout
	}
	// Kafka holds an instance id to the rule of topic names; an id that
	// breaks it would only be refused later, by the broker.
	if s.instanceID != "" && !validTopic(s.instanceID) {
		return nil, invalid("InstanceID %q is not a valid instance id (at most 249 of a-z A-Z 0-9 . _ -)", s.instanceID)
	}
	if cfg.SessionTimeout < 0 {
		return nil, invalid("SessionTimeout is negative (%v)", cfg.SessionTimeout)
	}
	if cfg.RetryBackoff < 0 {
		return nil, invalid("RetryBackoff is negative (%v)", cfg.RetryBackoff)
	}
	if cfg.MaxRetryBackoff < 0 {
		return nil, invalid("MaxRetryBackoff is negative (%v)", cfg.MaxRetryBackoff)
	}
	s.retryBackoff, s.maxRetryBackoff = cfg.RetryBackoff, cfg.MaxRetryBackoff
	if s.retryBackoff == 0 {
		s.retryBackoff = defaultRetryBackoff
	}
	if s.maxRetryBackoff == 0 {
		// A first pause longer than the default cap would be cut
		// short by it, which nobody asking for it means.
		s.maxRetryBackoff = max(defaultMaxRetryBackoff, s.retryBackoff)
	}
	if s.maxRetryBackoff < s.retryBackoff {
		return nil, invalid("MaxRetryBackoff (%v) is shorter than RetryBackoff (%v)", s.maxRetryBackoff, s.retryBackoff)
	}

	if useTLS {
		// MinVersion: Event Hubs and every broker still supported
		// speak TLS 1.2; older versions are broken. ServerName stays
		// empty on purpose: kgo then sets it, on every dial, to the
		// host of the broker it dials, which is what the certificate
		// names, also for the brokers it learns from metadata.
		s.tls = &tls.Config{MinVersion: tls.VersionTLS12}
		if cfg.TLSCAFile != "" {
			pool, err := loadCAFile(cfg.TLSCAFile)
			if err != nil {
				return nil, err
			}
			s.tls.RootCAs = pool
		}
	}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	return s, nil
}

// eventHubsUser is the SASL user Event Hubs expects with a connection
// string as the password.
const eventHubsUser = "$ConnectionString"

func loadCAFile(path string) (*x509.CertPool, error) {
	pem, err := os.ReadFile(path)
	if err != nil {
		return nil, invalid("TLSCAFile: %v", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, invalid("TLSCAFile %s holds no PEM certificate", path)
	}
	return pool, nil
}

// validTopic is Kafka's rule for topic names; a name it breaks would only
// fail later, at the broker, with a less helpful error.
func validTopic(t string) bool {
	if t == "" || len(t) > 249 || t == "." || t == ".." {
		return false
	}
	for i := 0; i < len(t); i++ {
		c := t[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}
