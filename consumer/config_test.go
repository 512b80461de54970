package consumer_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spool-run/spool/consumer"
)

func TestNewRejectsBadConfig(t *testing.T) {
	ok := func(context.Context, []consumer.Message) (bool, error) { return true, nil }
	valid := consumer.Config{Brokers: []string{"127.0.0.1:9092"}, Topic: "t", Group: "g"}
	notPEM := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(notPEM, []byte("not a certificate"), 0o600); err != nil {
		t.Fatal(err)
	}
	const hub = "Endpoint=sb://ns.servicebus.windows.net/;SharedAccessKeyName=n;SharedAccessKey=k"
	for _, tc := range []struct {
		says string
		edit func(*consumer.Config)
	}{
		{"Brokers is empty", func(c *consumer.Config) { c.Brokers = nil }},
		{"Brokers[1] is empty", func(c *consumer.Config) { c.Brokers = append(c.Brokers, " ") }},
		{"Topic is empty", func(c *consumer.Config) { c.Topic = "" }},
		{"Topic \"a b\" is not a valid topic name", func(c *consumer.Config) { c.Topic = "a b" }},
		{"Group is empty", func(c *consumer.Config) { c.Group = "" }},
		{"give one of Topic, Topics and TopicRegex", func(c *consumer.Config) { c.Topics = []string{"u"} }},
		{"give one of Topic, Topics and TopicRegex", func(c *consumer.Config) { c.Topic, c.Topics, c.TopicRegex = "", []string{"u"}, "u.*" }},
		{"give one of Topic, Topics and TopicRegex", func(c *consumer.Config) { c.TopicRegex = "u.*" }},
		{"Topics is empty", func(c *consumer.Config) { c.Topic, c.Topics = "", []string{} }},
		{"Topics[1] \"a b\" is not a valid topic name", func(c *consumer.Config) { c.Topic, c.Topics = "", []string{"u", "a b"} }},
		{"Topics names \"u\" twice", func(c *consumer.Config) { c.Topic, c.Topics = "", []string{"u", "v", "u"} }},
		{"TopicRegex \"orders-(eu\" does not compile", func(c *consumer.Config) { c.Topic, c.TopicRegex = "", "orders-(eu" }},
		{"TopicRegex \")(\" does not compile", func(c *consumer.Config) { c.Topic, c.TopicRegex = "", ")(" }},
		{"TopicRefresh is negative", func(c *consumer.Config) { c.TopicRefresh = -time.Second }},
		{"InstanceID \"pod 1\" is not a valid instance id", func(c *consumer.Config) { c.InstanceID = "pod 1" }},
		{"Topics has 2 topics with Event Hubs", func(c *consumer.Config) {
			c.Brokers, c.Topic, c.Topics, c.EventHubsConnectionString = nil, "", []string{"a", "b"}, hub
		}},
		{"TopicRegex with Event Hubs", func(c *consumer.Config) {
			c.Brokers, c.Topic, c.TopicRegex, c.EventHubsConnectionString = nil, "", "a.*", hub+";EntityPath=hub"
		}},
		{"BatchSize is negative", func(c *consumer.Config) { c.BatchSize = -1 }},
		{"BatchTimeout is negative", func(c *consumer.Config) { c.BatchTimeout = -time.Second }},
		{"RetryBackoff is negative", func(c *consumer.Config) { c.RetryBackoff = -time.Second }},
		{"MaxRetryBackoff is negative", func(c *consumer.Config) { c.MaxRetryBackoff = -time.Second }},
		{"SessionTimeout is negative", func(c *consumer.Config) { c.SessionTimeout = -time.Second }},
		{"MaxRetryBackoff (1s) is shorter than RetryBackoff (2s)", func(c *consumer.Config) {
			c.RetryBackoff, c.MaxRetryBackoff = 2*time.Second, time.Second
		}},
		{"SASLPlain.User is empty", func(c *consumer.Config) { c.SASLPlain = &consumer.PlainAuth{Password: "p"} }},
		{"TLSCAFile", func(c *consumer.Config) { c.TLSCAFile = filepath.Join(t.TempDir(), "missing.pem") }},
		{"holds no PEM certificate", func(c *consumer.Config) { c.TLSCAFile = notPEM }},
		{"no Endpoint", func(c *consumer.Config) { c.EventHubsConnectionString = "SharedAccessKey=k" }},
		{"Topic is empty and the Event Hubs connection string has no EntityPath", func(c *consumer.Config) {
			c.Brokers, c.Topic, c.EventHubsConnectionString = nil, "", hub
		}},
		{"SASLPlain and EventHubsConnectionString are exclusive", func(c *consumer.Config) {
			c.EventHubsConnectionString, c.SASLPlain = hub, &consumer.PlainAuth{User: "u"}
		}},
	} {
		cfg := valid
		tc.edit(&cfg)
		_, err := consumer.New(cfg, ok)
		if !errors.Is(err, consumer.ErrInvalidConfig) || !strings.Contains(err.Error(), tc.says) {
			t.Errorf("%s: New: %v", tc.says, err)
		}
	}
	if _, err := consumer.New(valid, nil); !errors.Is(err, consumer.ErrInvalidConfig) {
		t.Errorf("a nil handler: %v", err)
	}

	// Valid: defaults, and an Event Hubs string with its own topic and
	// broker, or with both overridden.
	for _, cfg := range []consumer.Config{
		valid,
		{Group: "g", EventHubsConnectionString: hub + ";EntityPath=hub"},
		{Group: "g", EventHubsConnectionString: hub, Topic: "t", Brokers: []string{"127.0.0.1:9093"}},
		{Group: "g", EventHubsConnectionString: "Endpoint=sb://localhost;SharedAccessKeyName=n;SharedAccessKey=k;UseDevelopmentEmulator=true;EntityPath=hub"},
		{Brokers: []string{"b:9092"}, Topic: "t", Group: "g", SASLPlain: &consumer.PlainAuth{User: "u", Password: "p"}, TLS: true},
		{Brokers: []string{"b:9092"}, Topic: "t", Group: "g", RetryBackoff: time.Minute}, // the cap follows
		{Brokers: []string{"b:9092"}, Topics: []string{"t", "u"}, Group: "g"},
		{Brokers: []string{"b:9092"}, TopicRegex: "orders-.*", Group: "g"},
		{Brokers: []string{"b:9092"}, Topic: "t", Group: "g", InstanceID: "spool-consume-0", NoCommit: true},
		{Group: "g", EventHubsConnectionString: hub, Topics: []string{"t"}},
	} {
		c, err := consumer.New(cfg, ok)
		if err != nil {
			t.Errorf("New(%+v): %v", cfg, err)
			continue
		}
		if err := c.Shutdown(context.Background()); err != nil {
			t.Errorf("Shutdown of a consumer never run: %v", err)
		}
	}
}
