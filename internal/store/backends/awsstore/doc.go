// Package awsstore is the JobStore on AWS: SQS carries job ids,
// DynamoDB is the truth. Any number of server replicas may share one set of
// queues and tables; nothing is kept in memory that another replica needs.
//
// # Resources
//
// One SQS standard queue per spool queue (named QueuePrefix + queue, or
// configured by URL), each with a dead-letter queue. A message body is only
// {"job_id","queue","attempt","sent"}.
//
// The jobs table holds one item per job, keyed by job_id: its fixed part
// (params, execution config with the job's own batching config, ...) as a
// protobuf, and its state, attempt, lease, result and log head as plain
// attributes. Three indexes: by-queue (queue + created_key) and by-time
// (a constant partition + created_key) list jobs newest first; leases
// (sparse: only running jobs) finds expired leases. The same table holds
// one request marker per request_id (key "request#" + SHA-256 of it), API
// keys (see keys.go), scatter records (see Scatters) and the records of
// the sources of ingested logs (see Ingesting logs of other programs).
//
// The events table holds one item per stored event, keyed by job_id +
// sequence (a batch is one item, at its first sequence): end_seq,
// event_type (2 for OUTPUT_BATCH), attempt, payload (events.Encode: the
// protobuf, zstd-compressed when that helps), ttl (Unix seconds, on every
// item), and for output, first_line and last_line. The by-line local index
// (job_id + last_line, output items only) makes reading from a line as
// cheap as from a sequence. The same table holds scatters' batches (see
// Scatters), and the markers and accepted events of ingested logs.
//
// # Enqueue
//
// A request_id is made unique by a conditional PutItem of its marker, which
// also holds the whole new job. Only the caller that wrote the marker goes
// on: it sends the SQS message, then puts the job item (only if absent).
// Callers that find the marker return the job it names; if the job is not
// there yet they wait, and once the marker is a few seconds old they finish
// the enqueue themselves from the marker (send, put-if-absent), so a server
// dying between the steps leaves no request_id pointing at nothing. Sending
// before writing means a job item never exists without a message; a message
// whose job is missing is put back while it is young (by its sent time, or,
// in messages without one, its time-ordered job id) and dropped after a
// minute. (A job named by its caller, like a scatter's batch job, named
// after the scatter, may have an id much older than its enqueue.) No
// transactions are needed (the test server has none): every step is
// idempotent or conditional.
//
// # Leases
//
// Dequeue long-polls SQS (up to 20 s, up to 10 messages, visibility = the
// lease) and, for each message, reads the job: missing or final, the message
// is dropped (poison); running under a current lease, it is a duplicate and
// is hidden until that lease ends; otherwise the job is leased by a
// conditional UpdateItem on the attempt it was read with, so of two
// receivers of one message only one wins. The lease id is the message's
// receipt handle. A lease always ends no later than the message's
// visibility (it is measured from before the receive, and restarted when a
// receive was slow), so SQS does not redeliver a message whose lease is
// current. Heartbeat extends the lease with an UpdateItem fenced by the
// lease (state, attempt, lease id), then the message's visibility; Complete
// makes the job final the same way, then deletes the message. SQS calls
// after the DynamoDB write are best effort: if a message shows up early or
// is not deleted, the next receive sees the job in DynamoDB and hides or
// drops it. ExpireLeases fails (or cancels) the expired jobs that are out
// of attempts and re-queues the rest, whose messages SQS shows again; it
// also fails the jobs whose messages SQS dead-lettered after
// MaxReceiveCount receives.
//
// # Appending events: fencing
//
// BatchWriteItem, the only way to write 25 items in one call, takes no
// conditions, so a stalled server (a "zombie") could write items after its
// lease was taken over. Append therefore works in three steps:
//
//  1. reserve: an UpdateItem of the job item records the range it will
//     write, [next_seq, res_seq) with its lease id, on the condition that
//     the lease is current, the head is where it was read, and no other
//     lease holds a reservation;
//  2. write the items (BatchWriteItem, 25 a call, unprocessed items retried
//     with backoff);
//  3. commit: an UpdateItem moves the head (next_seq, next_line) over the
//     range, on the same conditions, and bumps rev.
//
// Readers only read below the committed head. A zombie can only write
// inside a range it reserved. When a new lease is granted while a
// reservation of an older lease is pending, that range becomes a hole: the
// new attempt's head moves past it (lines do not: holes hold no
// acknowledged output), readers skip items in holes, and the range is never
// written by anyone else, so whatever the zombie writes there, whenever it
// does, cannot overwrite or interleave with the new attempt's log; its
// commit is refused. No clocks are trusted: the fence is the conditional
// updates. Sequences skipped this way are the only gaps a log can have.
//
// A publish of the same lease that finds its own pending reservation (an
// earlier call that crashed before or after writing, or is slow) takes it
// over: the worker resends the same events for the same sequences, so
// rewriting them is harmless; items at sequences the retry does not write
// are deleted first, and a retry that covers less than the reservation is
// refused, so nothing of the earlier call is left past the head.
//
// # Reading
//
// Read reads the job item (strongly consistent: its head and holes), then
// queries the events table strongly consistently, so a reader woken by a
// commit sees it. From a sequence, it queries forward from it; when no item
// starts there, the item holding it (the last one starting before it, no
// further back than the batch floor, max(1, from - max_batch_size + 1),
// with the job's own max_batch_size) is found by a descending query of one
// item and comes first. From a line L, one query of the by-line index
// finds the first output item with last_line >= L-1; if it ends at L-1,
// the read starts just after it, else at it. No query asks for more items
// than the read's Limit allows. ReadStats counts every event item DynamoDB
// returned.
//
// # Listing
//
// List queries by-queue (one queue) or by-time (all queues) newest first.
// These indexes project only state, so the state filter runs in DynamoDB
// and the frequent writes (log head, lease) do not touch them; the page's
// jobs are then read with BatchGetItem. by-time puts every job in one index
// partition: that caps job creation at about 1,000 per second across the
// deployment (DynamoDB's per-partition write rate) and is far cheaper than
// a Scan, which would read the whole table for every page. The state
// filter applies after a query's limit, so a listing by state examines at
// most listRounds queries of listScan entries per call; one that few jobs
// match returns a short, even empty, page and goes on at the next call.
// (An index keyed by state would find them directly, but it would take a
// third index write at every state change, another for queue and state,
// and a merge of one query per state.) The cursor is an index position,
// (created_at, job_id): the page's last job, or the last entry examined
// when the call stopped first.
//
// # Watching across replicas
//
// Every change a reader cares about bumps the job item's rev. Changes made
// through this Store wake its watchers at once. DynamoDB Streams would push
// other replicas' changes, but not every endpoint has them; instead each
// Store polls the rev of the jobs that have watchers, every
// WatchPollInterval, in BatchGetItem calls, and stops when there are none.
// A job has watchers while a Watch of it lasts (until the watch's context
// ends), so jobs nobody follows any more are neither polled nor kept. See
// watcher for why no change after a Watch call is missed.
//
// # Scatters
//
// A scatter's record is a jobs-table item, key "scatter#" + scatter id:
// version (N), active (BOOL) and record (B, storekit.EncodeScatter: the
// scatter and the driver's bookkeeping). UpdateScatter is a PutItem on
// condition that version is the one read. The record is listed through
// by-time, created_key = the scatter id (UUIDv7: time ordered) in one of
// two partitions, "scatters-active" or "scatters-inactive", as active says.
// The drivers list active scatters all the time, and most scatters ever
// made are finished: a filter on active would read every finished one
// (until the work bound of a call) each time, where this reads only the
// active ones. A full listing merges the two partitions' queries; each is
// asked for one entry more than a page, so the page is exact and the
// cursor (the page's last id) is "" on the last page. Records change at
// every driver round, but the index only when active does.
//
// A batch's items (a JSON array of up to 16 MB) are events-table items
// under "scatter#" + id + "#b#" + batch index, one per chunk of at most
// 350 KB (DynamoDB's item limit is 400 KB), with the chunk number as
// sequence, the bytes as payload and the batch's chunk count as chunks,
// and no ttl: they live as long as their scatter. ScatterBatch is one
// strongly consistent query of the partition, reassembling the chunks in
// order. Without transactions, CreateScatter refuses an id in use (a
// strongly consistent read), writes every chunk (BatchWriteItem, 25 items
// a call, four calls at once, unprocessed items retried with backoff),
// then the record, only if absent: a scatter exists once its record does,
// with all its batches. A create that dies before the record leaves chunks
// that no record names; a retry with the same id writes over them, and
// since a reader takes only as many chunks as the batch's first says, a
// leftover chunk past the retry's end is never read.
//
// # Ingesting logs of other programs
//
// Each source (a log group and stream, a shipper's "source") has a record
// in the jobs table, key "source#" + hex SHA-256 of the source (a source
// may be a kilobyte of any text): version (how many jobs it has had), the
// id of its newest job and that job as created (a protobuf), and the ids
// of its jobs newest first, at most sourceJobsKept (1,000). List with a
// Source pages through those ids with the usual cursor, reading the jobs
// with BatchGetItem and filtering by state here. The record has no ttl:
// job records do not expire, and a record lost while its job is open
// would let a second job open.
//
// The source's newest job is its open one while it runs. It is an ordinary
// job item, running attempt 1 under lease_id store.ExternalLease, plus
// src_ord (the record version that opened it), with no lease_part or
// lease_expires (so the sparse leases index never holds it; ExpireLeases
// skips external jobs anyway), no SQS message and no request marker. Get
// and List show no lease expiry; Complete and Heartbeat under
// store.ExternalLeaseRef make no SQS calls; a message naming such a job
// (none should exist) is dropped, never leased. A new job opens with a
// PutItem of the record on condition that version is the one read, when the
// newest job read was final (or there was none): of servers opening one at
// once, one wins, and the others ingest into its job. The job item is
// written after the record, only if absent; a call that finds the record
// naming a job not written yet writes it from the record, so a server dying
// between the two leaves nothing half made. Each store remembers the job it
// last saw open per source and, while that job still runs, reads only the
// job (a running job of the source is its open one): the record is read
// again when the job ends.
//
// Every accepted event has a marker in the events table: key "seen#" +
// the source's hash + "#i#" + the event id (or "#h#" + its SHA-256, when
// longer than 1 KB or not UTF-8), sequence 0, holding target (its job),
// src_ord, group (where its call's reservation began), line and ttl. An
// Ingest call reads its events' markers with BatchGetItem (100 keys a
// call, strongly consistent) and drops the events whose marker is
// committed: its group lies below its job's committed head and outside
// the job's holes. A marker left by a call that died before committing
// does not count, so the sender's retry stores its event. The accepted
// events of each call are kept too, under "accepted#" + job id, as one
// byte stream (each event's id, time, message, line and line count; zstd
// when that helps) in chunks of at most 350 KB at sequence group*65536 +
// chunk number, with the call's chunk count and ttl. Accepted reads them
// in order, skipping calls that never committed. ReplaceLog writes the
// items it is given over the stored ones, deletes the items below the
// head that it was not given, and bumps rev; the head stays.
//
// A call writes with Append's three steps under a claim of its own: the
// fence is store.ExternalLease, which every call of the job shares, and
// the reservation's owner (res_lease) is a random token of the call, with
// res_at, when it was made. The call reads the open job, then the markers,
// and reserves on condition that the head is where that read had it and
// no reservation is pending: an event committed by another call after the
// read makes the reservation fail, and the next round sees its marker. A
// call that finds another's reservation waits (backoff, up to
// ingestPatience, then spool.ErrThrottled: the sender retries); a
// reservation whose res_at is more than ingestAbandonAfter (30 s) old
// belongs to a call that died or stalled, and becomes a hole, as a lost
// lease's does, before the log goes on after it. A call renews res_at
// while it writes, so a long one is not taken for dead. Clocks decide only
// when to wait and when to give a reservation up, never what is stored:
// the fence is the conditional updates, and a stalled call whose range
// was taken over has its commit refused (it returns an error; whatever it
// wrote lies in the hole).
//
// Markers need more than that. A marker is rewritten whenever its event is
// accepted again, and a stalled call waking after its events were stored by
// the call that took over would otherwise replace their markers with its
// own, which point into its hole: the next delivery of those events would
// store them a second time. So markers are written with conditional
// PutItems (BatchWriteItem takes no conditions; the server policy in
// deploy/aws grants PutItem on the events table for them), markerWriters at
// once, each replacing only the marker of an earlier call: a lower src_ord,
// or the same with a group no later than its own. A later reservation
// always begins further on (holes are never reused) or in a later job, so a
// live call is never refused; a refused one has been taken over, and fails
// before its commit.
//
// What one call of n new events costs, its source's job open (50 lines a
// batch): a GetItem of the job; ceil(n/100) BatchGetItem of markers (n
// strongly consistent reads, found or not); an UpdateItem to reserve; the
// log's items (about lines/50) and the call's accepted events (one chunk
// unless over 350 KB) in BatchWriteItem calls of 25; n PutItem of markers;
// an UpdateItem to commit. For 1,000 one-line events that is 1,014
// requests, about 1,000 RCU and 1,030 WCU (TestIngestCost logs them):
// markers are nearly all of it. A delivery of events stored before costs
// the job and marker reads alone. Opening a job adds a read and a write
// of the record and a write of the job.
package awsstore
