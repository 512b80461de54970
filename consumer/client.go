package consumer

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl/plain"
)

// clientOpts are the kgo options of a consumer: a group member that commits
// by hand and lets no rebalance cut between polling records and handing
// them to their partitions.
//
// The topic is left out on purpose: a kgo group client joins its group as
// soon as it knows a topic, and a Consumer that New made but nobody runs
// must not hold partitions. Run adds the topic.
func (c *Consumer) clientOpts(extra []kgo.Opt) []kgo.Opt {
	s := c.s
	reset := kgo.NewOffset().AtStart()
	if s.startAtLatest {
		reset = kgo.NewOffset().AtEnd()
	}
	opts := []kgo.Opt{
		kgo.SeedBrokers(s.brokers...),
		kgo.ConsumerGroup(s.group),
		kgo.DisableAutoCommit(),
		kgo.BlockRebalanceOnPoll(),
		kgo.OnPartitionsAssigned(c.onAssigned),
		kgo.OnPartitionsRevoked(c.onRevoked),
		kgo.OnPartitionsLost(c.onLost),
		kgo.ConsumeResetOffset(reset),
		kgo.WithLogger(kgoLogger{s.log}),
		kgo.WithHooks(c.auth),
	}
	if s.sessionTimeout > 0 {
		opts = append(opts, kgo.SessionTimeout(s.sessionTimeout), kgo.HeartbeatInterval(min(3*time.Second, s.sessionTimeout/3)))
	}
	if s.instanceID != "" {
		opts = append(opts, kgo.InstanceID(s.instanceID))
	}
	if s.tls != nil {
		opts = append(opts, kgo.DialTLSConfig(s.tls))
	}
	if s.user != "" {
		opts = append(opts, kgo.SASL(plain.Auth{User: s.user, Pass: s.password}.AsMechanism()))
	}
	return append(opts, extra...)
}

// kgoLogger passes kgo's log to slog: its warnings and errors (a broker
// that cannot be reached, a group session that failed) as they are, its
// chatty information only when debugging.
type kgoLogger struct{ log *slog.Logger }

func (l kgoLogger) Level() kgo.LogLevel {
	if l.log.Enabled(context.Background(), slog.LevelDebug) {
		return kgo.LogLevelInfo
	}
	return kgo.LogLevelWarn
}

func (l kgoLogger) Log(level kgo.LogLevel, msg string, keyvals ...any) {
	lvl := slog.LevelDebug
	switch level {
	case kgo.LogLevelError:
		lvl = slog.LevelError
	case kgo.LogLevelWarn:
		lvl = slog.LevelWarn
	}
	l.log.Log(context.Background(), lvl, "kafka client: "+msg, keyvals...)
}

// authWatch notices a broker that hangs up right after our SASL
// credentials. Brokers before KIP-152, and kfake, answer bad credentials so
// rather than with an error code, and kgo then reports a bare EOF, which
// on its own would look like a network fault worth retrying forever.
type authWatch struct{ hungUp atomic.Bool }

var _ kgo.HookBrokerE2E = (*authWatch)(nil)

func (w *authWatch) OnBrokerE2E(_ kgo.BrokerMetadata, key int16, e kgo.BrokerE2E) {
	if key != int16(kmsg.SASLAuthenticate) {
		return
	}
	w.hungUp.Store(e.WriteErr == nil && hangUp(e.ReadErr))
}

func hangUp(err error) bool {
	return errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, syscall.ECONNRESET) || errors.Is(err, net.ErrClosed)
}

// fatal tells whether err means that retrying cannot help: credentials or
// certificates that the broker or we reject, or permissions we lack. It
// returns err wrapped with what it means, or nil for errors worth waiting
// out (a broker that is restarting, a rebalance).
func (c *Consumer) fatal(err error) error {
	var (
		verify  *tls.CertificateVerificationError
		unknown x509.UnknownAuthorityError
		host    x509.HostnameError
		invalid x509.CertificateInvalidError
		header  tls.RecordHeaderError
		alert   tls.AlertError
	)
	switch {
	case errors.Is(err, kerr.SaslAuthenticationFailed), errors.Is(err, kerr.IllegalSaslState),
		errors.Is(err, kerr.UnsupportedSaslMechanism):
		return fmt.Errorf("consumer: authentication failed: %w", err)
	case hangUp(err) && c.auth.hungUp.Load():
		return fmt.Errorf("consumer: authentication failed: the broker hung up after the SASL credentials: %w", err)
	case errors.Is(err, kerr.FencedInstanceID):
		// Going on would fence the other consumer in turn, and so on.
		return fmt.Errorf("consumer: another consumer joined the group with instance id %q, which fenced this one: give each consumer its own: %w",
			c.s.instanceID, err)
	case errors.Is(err, kerr.TopicAuthorizationFailed), errors.Is(err, kerr.GroupAuthorizationFailed),
		errors.Is(err, kerr.ClusterAuthorizationFailed):
		return fmt.Errorf("consumer: not authorized: %w", err)
	case errors.As(err, &verify), errors.As(err, &unknown), errors.As(err, &host), errors.As(err, &invalid),
		errors.As(err, &header), errors.As(err, &alert):
		return fmt.Errorf("consumer: TLS handshake with the broker failed: %w", err)
	}
	return nil
}
