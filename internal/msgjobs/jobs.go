package msgjobs

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/spool-run/spool"
	"github.com/spool-run/spool/client"
	"github.com/spool-run/spool/consumer"
)

// Bounds that keep a job made from a message within what the server takes
// (a job's command, environment and stdin together hold at most 256 KiB).
const (
	// MaxStdin is the most of a message a job gets on stdin.
	MaxStdin = 248 << 10
	// MaxKey is the longest message key passed in the environment.
	MaxKey = 4 << 10
)

// Config says how messages become jobs.
type Config struct {
	// Client is the spool server the jobs go to.
	Client *client.Client
	// Command, when it has Argv or Script, is the job of every message: it
	// runs with the message's value on stdin. Its Queue, Env, WorkingDir,
	// Timeout, MaxAttempts and Retries apply to every job. Without one,
	// every message is a job spec (ParseSpec).
	Command client.SubmitParams
	// Queue is the queue of a spec that names none, and of rejected jobs
	// ("": the server's default queue).
	Queue string
	// Secrets are the secrets jobs may get (name to value): a job spec's
	// "secrets" names those its job gets. (A Command's own Secrets go to
	// every job of it.)
	Secrets map[string]string
	// DeadLetter, when set, receives the messages that cannot become jobs,
	// with the reason; otherwise each is recorded as a rejected job. An
	// error from it refuses the batch (it is delivered again).
	DeadLetter func(ctx context.Context, m consumer.Message, reason string) error
	// Logger receives a line per rejected message (nil: discarded).
	Logger *slog.Logger
}

// Handler returns the consumer handler that makes one job per message. A
// batch is committed only when every message has its job, or went to the
// dead-letter topic, or was recorded as rejected; a server that cannot be
// reached refuses the batch, and it comes back with the same request ids.
func Handler(cfg Config) consumer.Handler {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	h := &handler{cfg: cfg}
	return h.batch
}

type handler struct{ cfg Config }

// hasCommand: every message runs Config.Command (else each is a spec).
func (h *handler) hasCommand() bool { return len(h.cfg.Command.Argv) > 0 || h.cfg.Command.Script != "" }

func (h *handler) batch(ctx context.Context, batch []consumer.Message) (bool, error) {
	errs := make([]error, len(batch))
	var wg sync.WaitGroup
	for i, m := range batch {
		wg.Go(func() { errs[i] = h.one(ctx, m) })
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return false, err
	}
	return true, nil
}

// one makes the job of m, or rejects m when it cannot be a job.
func (h *handler) one(ctx context.Context, m consumer.Message) error {
	sub, err := h.submission(m)
	if err != nil {
		return h.reject(ctx, m, err.Error())
	}
	_, _, err = h.cfg.Client.Submit(ctx, sub)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, spool.ErrInvalidArgument), errors.Is(err, spool.ErrAlreadyExists):
		// The server will never take this job as it is; an AlreadyExists
		// means the request id was used for another message (a topic
		// deleted and made again starts its offsets over).
		return h.reject(ctx, m, "the server refused its job: "+err.Error())
	}
	return fmt.Errorf("message %s: %w", Where(m), err)
}

// submission is the job of m.
func (h *handler) submission(m consumer.Message) (client.SubmitParams, error) {
	env, err := messageEnv(m)
	if err != nil {
		return client.SubmitParams{}, err
	}
	var sub client.SubmitParams
	if h.hasCommand() {
		if len(m.Value) > MaxStdin {
			return sub, fmt.Errorf("the message holds %d bytes; a job's stdin holds at most %d (248 KiB)", len(m.Value), MaxStdin)
		}
		sub = h.cfg.Command
		sub.Stdin = m.Value
	} else {
		if sub, err = ParseSpec(m.Value, h.cfg.Secrets); err != nil {
			return sub, err
		}
		if sub.Queue == "" {
			sub.Queue = h.cfg.Queue
		}
	}
	sub.Env = merge(sub.Env, env)
	sub.RequestID = RequestID(m)
	return sub, nil
}

// reject sends m to the dead-letter topic, or records it as a failed job
// carrying the message (as much of it as a job holds) and the reason.
func (h *handler) reject(ctx context.Context, m consumer.Message, reason string) error {
	reason = fmt.Sprintf("message %s cannot become a job: %s", Where(m), reason)
	h.cfg.Logger.Warn("message rejected", "topic", m.Topic, "partition", m.Partition, "offset", m.Offset, "reason", reason,
		"dead_letter", h.cfg.DeadLetter != nil)
	if h.cfg.DeadLetter != nil {
		if err := h.cfg.DeadLetter(ctx, m, reason); err != nil {
			return fmt.Errorf("message %s: could not send it to the dead-letter topic: %w", Where(m), err)
		}
		return nil
	}
	env, _ := messageEnv(m) // a key too long to pass is left out; the reason says so
	stdin := m.Value
	if len(stdin) > MaxStdin {
		stdin = stdin[:MaxStdin]
		reason += fmt.Sprintf(" (the job keeps the first %d of its %d bytes)", MaxStdin, len(m.Value))
	}
	if len(reason) > 16<<10 {
		reason = reason[:16<<10-3] + "..."
	}
	queue := h.cfg.Queue
	if h.hasCommand() {
		queue = h.cfg.Command.Queue
	}
	_, _, err := h.cfg.Client.Submit(ctx, client.SubmitParams{Queue: queue, Env: env, Stdin: stdin,
		RequestID: RequestID(m) + "/rejected", RejectReason: strings.ToValidUTF8(reason, "?")})
	if err != nil {
		return fmt.Errorf("message %s: could not record it as a rejected job: %w", Where(m), err)
	}
	return nil
}

// RequestID is the idempotency key of m's job: the same message, however
// often it is delivered, makes one job. A topic name too long for a
// request id is hashed.
func RequestID(m consumer.Message) string {
	topic := m.Topic
	if len(topic) > 120 {
		sum := sha256.Sum256([]byte(topic))
		topic = "sha256-" + hex.EncodeToString(sum[:16])
	}
	return "kafka:" + topic + "/" + strconv.Itoa(int(m.Partition)) + "/" + strconv.FormatInt(m.Offset, 10)
}

// Where names a message for people: topic/partition@offset.
func Where(m consumer.Message) string {
	return fmt.Sprintf("%s/%d@%d", m.Topic, m.Partition, m.Offset)
}

// messageEnv is what a job learns of its message from the environment.
// A key that is not text (invalid UTF-8 or a NUL, which an environment
// cannot hold) comes in base64. A key too long to pass is an error; the
// environment then holds the rest.
func messageEnv(m consumer.Message) (map[string]string, error) {
	env := map[string]string{
		"SPOOL_MESSAGE_TOPIC":     m.Topic,
		"SPOOL_MESSAGE_PARTITION": strconv.Itoa(int(m.Partition)),
		"SPOOL_MESSAGE_OFFSET":    strconv.FormatInt(m.Offset, 10),
	}
	if !m.Timestamp.IsZero() {
		env["SPOOL_MESSAGE_TIMESTAMP"] = m.Timestamp.UTC().Format(time.RFC3339Nano)
	}
	switch {
	case len(m.Key) > MaxKey:
		return env, fmt.Errorf("its key holds %d bytes; at most %d (4 KiB) are passed to a job", len(m.Key), MaxKey)
	case m.Key == nil:
	case utf8.Valid(m.Key) && !strings.ContainsRune(string(m.Key), 0):
		env["SPOOL_MESSAGE_KEY"] = string(m.Key)
	default:
		env["SPOOL_MESSAGE_KEY_BASE64"] = base64.StdEncoding.EncodeToString(m.Key)
	}
	return env, nil
}

// merge is base with over's variables set on top, in a new map.
func merge(base, over map[string]string) map[string]string {
	out := make(map[string]string, len(base)+len(over))
	maps.Copy(out, base)
	maps.Copy(out, over)
	return out
}

// DeadLetterTo returns a Config.DeadLetter that produces each rejected
// message to topic through kc, with its key, value and headers, and
// headers that say why and where it came from (spool-reason,
// spool-source-topic, spool-source-partition, spool-source-offset). A
// message delivered again may be sent again: the topic gets it at least
// once.
func DeadLetterTo(kc *kgo.Client, topic string) func(context.Context, consumer.Message, string) error {
	return func(ctx context.Context, m consumer.Message, reason string) error {
		r := &kgo.Record{Topic: topic, Key: m.Key, Value: m.Value, Timestamp: m.Timestamp}
		for _, hd := range m.Headers {
			r.Headers = append(r.Headers, kgo.RecordHeader{Key: hd.Key, Value: hd.Value})
		}
		r.Headers = append(r.Headers,
			kgo.RecordHeader{Key: "spool-reason", Value: []byte(reason)},
			kgo.RecordHeader{Key: "spool-source-topic", Value: []byte(m.Topic)},
			kgo.RecordHeader{Key: "spool-source-partition", Value: []byte(strconv.Itoa(int(m.Partition)))},
			kgo.RecordHeader{Key: "spool-source-offset", Value: []byte(strconv.FormatInt(m.Offset, 10))},
		)
		return kc.ProduceSync(ctx, r).FirstErr()
	}
}
