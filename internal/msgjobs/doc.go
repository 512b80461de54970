// Package msgjobs turns messages consumed from a Kafka topic (or an Event
// Hubs event hub) into spool jobs, one job per message, for `spool
// consume`.
//
// A message is either a job spec (JSON, see ParseSpec) or, when a command
// is given, the input of that command on stdin. Each job's request id is
// derived from the message's topic, partition and offset, so a message
// delivered again (after a crash, a rebalance or a refused batch) finds
// the job it made the first time instead of making a second one. A batch
// is committed only once every one of its messages has a job durably
// stored, or, for a message that cannot become a job, has gone to the
// dead-letter topic or been recorded as a failed (rejected) job that
// carries the message and the reason.
package msgjobs
