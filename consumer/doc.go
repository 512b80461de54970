// Package consumer consumes Kafka topics, or an Azure Event Hubs event hub
// through its Kafka endpoint, in a consumer group, and hands the messages to
// one Handler in batches.
//
// # Topics
//
// Config.Topic names one topic, Config.Topics several, and
// Config.TopicRegex a pattern that the whole name of a topic must match,
// checked again every Config.TopicRefresh so that topics created later
// are consumed too. Whatever the topics, the group shares out all their
// partitions and a batch is of one partition of one topic.
//
// # Batches
//
// A batch holds messages of one partition of one topic, in offset order: up to
// Config.BatchSize of them (20 by default), or fewer once the first of them
// has waited Config.BatchTimeout (1 s by default). The partitions a consumer
// owns are handled concurrently, with at most one batch of a partition in
// the handler at a time.
//
// # The handler's answer
//
// A handler that returns commit=true has done the batch: its offsets are
// committed (the last offset + 1, synchronously) before the partition's
// next batch starts. commit=false, an error or a panic (recovered, and
// logged with its stack) mean the batch is not done: nothing is committed
// and the same batch is delivered again, in the same process, after a pause
// (Config.RetryBackoff, doubling with jitter up to Config.MaxRetryBackoff),
// until the handler accepts it or the consumer stops. The partition's later
// messages wait behind it; no message is ever skipped. While a partition is
// stuck, fetching it pauses once a few batches are waiting, so memory stays
// bounded. Other partitions carry on.
//
// A commit that fails (the broker is away) is logged and counted, and
// consumption carries on: the partition's next commit covers it, and the
// revoke or graceful stop commits the newest offset handled.
//
// With Config.NoCommit nothing is ever committed: batches are handled as
// above (a refused one comes again) but the group's offsets stay as they
// were, which suits replays and dry runs.
//
// Delivery is therefore at least once: a message can be handed over again
// (after a refusal, after a commit that failed and a crash, or to the next
// owner of a partition whose handler did not commit in time), so the
// handler's effects should be idempotent.
//
// # Rebalances
//
// When a partition is revoked (it moves to another member of the group), no
// new batch of it starts; the batch in the handler finishes and, if the
// handler accepts it, is committed before the partition goes, so the next
// owner starts right after it. Messages buffered behind it are dropped: the
// next owner reads them from the committed offset. A batch refused during a
// revoke is not retried here; it is left uncommitted, for the next owner.
//
// When a partition is lost (the group gave it away without us, for example
// after the session timed out), the handler's context is cancelled, the
// consumer waits for the handler to return, and nothing is committed, since
// the partition already belongs to someone else.
//
// Rebalances can take at most the group's rebalance timeout (60 s by
// default): a handler that runs longer than that delays the whole group.
// A handler that runs longer than a minute is logged.
//
// # Stopping
//
// Shutdown stops gracefully: fetching stops, every buffered message is
// handed to the handler at once (without waiting for the batch timeout),
// what the handler accepts is committed, and the consumer leaves the group
// (unless it is a static member, below).
// A batch refused during the graceful stop is not retried: it and the
// rest of its partition stay uncommitted, and come back on the next start.
// If Shutdown's context ends first, or Run's context ends, the consumer
// stops at once: the handlers' contexts are cancelled and nothing more is
// committed.
//
// # Static membership
//
// With Config.InstanceID the consumer is a static member of its group: a
// consumer restarted within Config.SessionTimeout under the same
// InstanceID gets its partitions back, and the other members are not
// rebalanced, neither when it goes nor when it comes back. Its stops, even
// graceful ones, therefore do not leave the group: its partitions wait for
// it until the session times out. Two consumers must never share an
// InstanceID; the second to join fences the first, whose Run returns an
// error that wraps kerr.FencedInstanceID.
//
// # Event Hubs
//
// Config.EventHubsConnectionString connects to an Event Hubs namespace the
// way its Kafka endpoint expects: TLS to <namespace>:9093 and SASL PLAIN
// with the user "$ConnectionString" and the connection string as the
// password; the event hub named by EntityPath is the topic. An Event Hubs
// consumer group is a Kafka consumer group. Wrong credentials make Run
// return an error that says authentication failed, rather than retry
// forever. A connection string of the local Event Hubs emulator
// (UseDevelopmentEmulator=true) connects to its Kafka endpoint,
// <host>:9092, with the same SASL PLAIN and without TLS.
//
// # Metrics
//
// With Config.Meters, the meter "spool/consumer" records
// spool.consumer.batch.size, spool.consumer.handler.duration (by outcome:
// commit, refused, error, panic), spool.consumer.commits (by result: ok,
// error), spool.consumer.redeliveries and spool.consumer.lag (by topic and
// partition).
package consumer
