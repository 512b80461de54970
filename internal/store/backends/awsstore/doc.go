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
// protobuf, and its state, attempt, lease, started_at, result, log head
// and spans (where each attempt after the first began) as plain
// attributes. What lease endings, notes and rerun links change
// (counters, retry time, cancel reason, notes, rerun_of and reruns) is one
// protobuf, book (storekit.Bookkeeping); a new job has one only when it is
// a rerun, for its rerun_of. A job given secrets keeps them sealed (package
// seal) in secrets, which only JobSecrets reads. Three indexes: by-queue (queue + created_key)
// and by-time (a constant partition + created_key) list jobs newest first;
// leases (sparse: running jobs, and in partitions of their own the
// scheduled jobs and those owing webhooks: see When jobs run) finds expired
// leases. The same table
// holds one request marker per request_id (key "request#" + SHA-256 of
// it), API keys (see keys.go), scatter records (see Scatters), the records
// of the sources of ingested logs (see Ingesting logs of other programs),
// the queue registry and pauses (see Queues), and the spent tickets and
// signed-out sessions (spent.go). With a jobs retention,
// final jobs and request markers carry ttl (see Retention).
//
// The events table holds one item per stored event, keyed by job_id +
// sequence (a batch is one item, at its first sequence; from a job's
// second attempt on, plus the attempt shifted past 40 bits: see Appending
// events: fencing): end_seq,
// event_type (2 for OUTPUT_BATCH), attempt, payload (events.Encode: the
// protobuf, compressed when that helps with Config.Compression, zstd by
// default, recoded from the S2 workers send; its first byte says which, so
// items of either are read), ttl (Unix seconds, on every item), and for
// output, first_line and last_line. The by-line local index
// (job_id + last_line, output items only) makes reading from a line as
// cheap as from a sequence. The same table holds scatters' batches (see
// Scatters), and the markers and accepted events of ingested logs.
//
// # Enqueue
//
// A request_id is made unique by a conditional PutItem of its marker, which
// also holds the whole new job (and its sealed secrets). Only the caller that wrote the marker goes
// on: it sends the SQS message, then puts the job item (only if absent).
// Callers that find the marker return the job it names; if the job is not
// there yet they wait, and once the marker is a few seconds old they finish
// the enqueue themselves from the marker (send, put-if-absent), so a server
// dying between the steps leaves no request_id pointing at nothing. Sending
// before writing means a job item never exists without a message; a message
// whose job is missing (after a few more reads within a second: a long
// poll receives it at once, often before the job's write lands) is put
// back while it is young (by its sent time, or,
// in messages without one, its time-ordered job id) and dropped after a
// minute. (A job named by its caller, like a scatter's batch job, named
// after the scatter, may have an id much older than its enqueue.) No
// transactions are needed (the test server has none): every step is
// idempotent or conditional.
//
// Sends to one queue that arrive together share SendMessageBatch requests
// (see gatherer), each enqueue going on once its own entry is sent; an
// entry SQS refuses fails its own enqueue only. The DynamoDB writes stay
// one conditional PutItem each: the marker's condition is what makes a
// request id create one job, and the job's (only if absent) keeps an
// enqueue finished from the marker by another caller from resetting a job
// that has moved on. BatchWriteItem takes no conditions, and
// TransactWriteItems (which dynalite lacks) bills each item twice and
// fails whole when one condition does; DynamoDB bills by item, not by
// request, so sharing requests there would save round trips only, which
// concurrent enqueues already overlap.
//
// # Leases
//
// Dequeue long-polls SQS (up to 20 s, the wait rounded up to whole seconds,
// up to 10 messages, visibility = the lease plus the wait) and, for each message, reads the job: missing or final, the message
// is dropped (poison); running under a current lease, it is a duplicate and
// is hidden until that lease ends; running under an expired lease, it is
// hidden for a moment, until a reaper settles the job (only ExpireLeases
// does, after the grace an outage calls for: see sweep.go); otherwise (the
// job is queued) the job is leased by a
// conditional UpdateItem on the attempt it was read with, so of two
// receivers of one message only one wins; the same UpdateItem sets
// started_at, so each attempt starts when it is leased (an external job's
// item is written with its creation time). The lease id is the message's
// receipt handle. A lease always ends no later than the message's
// visibility, so SQS does not redeliver a message whose lease is current:
// SQS hides a message from some moment after the receive was sent, for the
// lease plus the wait, so a lease of the asked length from the answer fits
// unless the answer came later than the wait (its visibility is then
// restarted). Heartbeat extends the lease with an UpdateItem fenced by the
// lease (state, attempt, lease id), then the message's visibility; Complete
// makes the job final the same way, then deletes the message. Finish (a
// completion carrying the attempt's last events) writes their items first,
// as Append does, and moves the head in the completion's own update. SQS calls
// after the DynamoDB write are best effort: if a message shows up early or
// is not deleted, the next receive sees the job in DynamoDB and hides or
// drops it. Deletes and visibility changes of one queue that arrive
// together share DeleteMessageBatch and ChangeMessageVisibilityBatch
// requests (see gatherer), each caller answered once its own entry is. ExpireLeases first gives grace after an outage of DynamoDB
// (the time of the last sweep is the item "sweeps#last"), then fails the
// jobs whose messages SQS dead-lettered after MaxReceiveCount receives,
// then fails (or cancels) the expired jobs that are out of attempts and
// re-queues the rest, whose messages SQS shows again.
//
// # Appending events: fencing
//
// BatchWriteItem, the only way to write 25 items in one call, takes no
// conditions, so a stalled server (a "zombie") could write items after its
// lease was taken over. Append therefore keeps each attempt's items apart
// and fences only the head:
//
//  1. read the job (strongly consistent): its head, its lease, and where
//     the lease's attempt keys its items;
//  2. write the items (BatchWriteItem, 25 a call, unprocessed items retried
//     with backoff) under the attempt's keys, past the committed head;
//  3. commit: one UpdateItem moves the head (next_seq, next_line) over them
//     and bumps rev, on the condition that the lease is current and the
//     head is where step 1 read it.
//
// An item's key (sequence) is its first sequence, plus, from the second
// attempt on, the attempt shifted past the low 40 bits (keyBase): the
// lease that starts an attempt after the first records, in the same
// update, where that attempt's log begins (spans: [attempt, sequence]
// pairs). Each attempt's part of the log runs from where it began to where
// the next began (the last one's, to the head), and readers read each part
// under its attempt's keys only. A zombie writes under its own attempt's
// keys at sequences past where its part ends: nothing reads those items,
// nothing else writes them, whenever it writes them it cannot overwrite or
// interleave with a later attempt's log, and its commit is refused. The
// next attempt's log goes on at the committed head, with no gap. The lease
// is made on condition that the head is where the lease read it (an
// attempt whose lease ran out may still commit output while its job waits
// queued, and that output must stay in its own attempt's part); when only
// the head moved, the job is leased again as it is now. No clocks are
// trusted: the fence is the conditional updates. So a publish costs the
// job item one write, whatever the lease's history. (Attempt 1 keys items
// by sequence alone, as every attempt did before spans: the part before
// the first span is read under plain sequences.)
//
// Items written past the head and never committed (a publish that died
// between its write and its commit, or a zombie's) stay where they are,
// unread, until the log's ttl removes them or the next publish of the
// same attempt writes the same events over them: a worker resends the same
// events at the same sequences, however it cuts them into calls, so a
// retry of a publish that died rewrites the same items, and a concurrent
// retry of a slow publish commits first, leaving the slow call's commit
// to find the head already past its events (it succeeds). A resend cut
// into batches differently (lines a worker batched anew after a restart)
// can leave an old item starting inside a new one: readers skip an item
// that starts inside the one they yielded before it, so each event is
// read once. (Deleting such items instead would cost every publish a
// query of the keys past the head.)
//
// Servers before this version reserved a publish's range first (res_seq,
// res_line, res_lease, res_at) and committed it in a second update. A
// reservation such a server left pending is committed over by the lease's
// next publish, and one left by a lease that ended becomes a hole at the
// next lease, as then: the new attempt's head moves past it (lines do not:
// holes hold no acknowledged output) and readers skip items in holes.
// Ingest calls still reserve (see Ingesting logs of other programs): they
// share one lease, so only a reservation tells them apart. A cluster
// should not mix versions while attempts after the first run: an older
// server neither records spans nor reads under an attempt's keys.
//
// # Reading
//
// Read reads the job item (strongly consistent: its head, spans and holes;
// once for all the reads of a store.ReadSession, such as a feed's pages),
// then queries the events table strongly consistently, so a reader woken
// by a commit sees it, one attempt's part of the log after the other (a
// query each; a log of one attempt is one part). From a sequence, it
// queries forward from it; when no item starts there, the item holding it
// (the last one starting before it, no further back than the batch floor,
// max(1, from - max_batch_size + 1), with the job's own max_batch_size,
// nor than the part's start) is found by a descending query of one item
// and comes first. From a line L, one query of the by-line index finds the
// first output item with last_line >= L-1 that is part of the committed
// log (under its attempt's keys, inside its attempt's part, outside the
// holes); if it ends at L-1, the read starts just after it, else at it.
// No query asks for more items than the read's Limit allows. ReadStats
// counts every event item DynamoDB returned.
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
// Store polls the rev of the jobs that have watchers, in BatchGetItem
// calls, and stops when there are none: every WatchPollInterval (50 ms),
// strongly consistent, the jobs someone follows on this server and whose
// changes do not come through it; every five of those, eventually
// consistent, the others (a heartbeat waiting for a cancel). A job has
// watchers while a Watch of it lasts (until the watch's context ends), so
// jobs nobody follows any more are neither polled nor kept. See watcher
// for why no change after a Watch call is missed.
//
// A server with followers of a job writes watched_until (N, Unix
// microseconds, 15 s ahead) on its item when the first arrives and every
// 5 s while any stays, bumping no rev; every server notes it wherever it
// reads the item (publishes, heartbeats, polls), and so tells the job's
// worker to flush promptly for a follower on another replica. See shares.
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
// A call writes in three steps, as Append did before spans: reserve its
// range on the job item (res_seq, res_line), write the items, commit the
// head over the range. Calls of one job share its attempt and its lease,
// so keys cannot keep them apart: the reservation does. The fence is
// store.ExternalLease, which every call of the job shares, and the
// reservation's owner (res_lease) is a random token of the call, with
// res_at, when it was made. The call reads the open job, then the markers,
// and reserves on condition that the head is where that read had it and
// no reservation is pending: an event committed by another call after the
// read makes the reservation fail, and the next round sees its marker. A
// call that finds another's reservation waits (backoff, up to
// ingestPatience, then spool.ErrThrottled: the sender retries); a
// reservation whose res_at is more than ingestAbandonAfter (30 s) old
// belongs to a call that died or stalled, and becomes a hole before the
// log goes on after it. A call renews res_at
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
//
// # Queues
//
// A pause is a jobs-table item, key "queue#" + the queue's name, kind
// "queue", with paused_at (Unix microseconds), written with
// if_not_exists(paused_at) so pausing again keeps the first time; resuming
// deletes it. QueuePaused, asked before every lease, is one strongly
// consistent GetItem of it (one read unit), so a pause holds from the
// next lease on every server.
//
// Which queues exist is kept in the queue registry, one jobs-table item
// (key "queues#registry") holding the names as a string set: each Store
// adds a queue (ADD, so adding twice is harmless) the first time it
// enqueues into it or opens an external job in it, before the job is
// written, and SetQueuePaused adds the queue it pauses. Nothing is
// scanned to find queues, and the registry costs one write per queue and
// server start. (It is one item, so at most some thousands of queue names:
// past DynamoDB's 400 KB a registration fails, which Enqueue logs and goes
// on.) QueueStats reads it, adds the configured queues and those this
// Store has looked up (which jobs made before the registry existed may
// name), reads their pause items with BatchGetItem, and leaves out the
// queues with neither a job nor a pause.
//
// Each queue is then counted from one walk of its by-queue index, newest
// first, projecting job_id, created_key and state (the index holds state,
// so no job is read for it): queued and running jobs are counted, the
// oldest queued one's created_at is its created_key's, and a final job
// created at or after since counts as ended since (a job ends after it is
// created). When it ended (its result's finished_at) is not in the index,
// so the final jobs created in the hour before since (statsEndedMargin)
// are read (BatchGetItem) to see whether they ended since; older ones are
// taken as ended before. SQS's ApproximateNumberOfMessages and
// ...NotVisible were the alternative, and were not used: they are
// estimates, and they are wrong even in a small store, since a queued job
// cancelled keeps its message until a receiver drops it, and a retry
// waiting out its backoff has an invisible message, as a running job has.
//
// The walk reads at most statsScan (5,000) index entries per queue and
// call, about 1 MB or 70 read units; the counts are exact (up to the
// index's replication lag, milliseconds) while that holds all of a
// queue's open jobs and those that ended since, which in a fresh store, or
// one whose queues are worked through, it does. The bounds accepted at
// scale: past 5,000 jobs newer than a queue's oldest open one, the counts
// are those of its newest 5,000 jobs (a backlog larger than that shows as
// 5,000 queued, and oldest_queued as the oldest of them); a job that ended
// since but was created more than an hour before since is not counted as
// ended. Exact counts of any backlog would need a sparse index of the
// open jobs (an attribute set only while a job is queued or running, as
// lease_part is for leases): every open job read, no finished one. It was
// left out because adding an index to existing tables needs a migration
// (UpdateTable, and a backfill of the open jobs).
//
// EndedPerMinute (the queues page's chart of the last hour) needs each
// ended job's end, which no index holds, so it reads the jobs: per queue,
// a walk of the by-queue index from the newest job down to those created
// an hour (statsEndedMargin) before since, at most statsScan entries,
// projecting job_id and state, then the final ones with BatchGetItem (a
// read unit per 4 KB of item, the job's params included). For a queue
// that ends a job a second that is up to 5,000 items, a few thousand read
// units, per walk. The service asks only when a caller wants the chart
// (the web UI's queues page, every 2 seconds while it is open), not for
// ListQueues, and always of the hour up to the minute under way, so each
// Store keeps what it found for a queue and answers the same window from
// it for a minute (endedFresh): a page open on every server costs a walk
// per queue, server and minute, and a job's end reaches the chart up to a
// minute late. The registry is read on every call, so a new queue shows
// at once. The bounds are QueueStats's: a queue with more than 5,000
// jobs created in the two hours counts only its newest 5,000, and a job
// that ran longer than the hour before since is missed. What was not done,
// and why: a per-minute counter item written at each job's end would make
// the read one Query of 60 items, but it adds a write to every completion,
// the path the store is built to keep cheap; a sparse index keyed by end
// time needs the same migration as above.
//
// # When jobs run
//
// A SCHEDULED job (a time ahead, jobs to run after, or a retry waiting out
// its backoff) has no SQS message. Its item sits in the leases index in a
// partition of its own: lease_part "scheduled" with lease_expires its
// run_after when it waits for its time only, "after" while it waits for
// other jobs (see placeOf; settle moves every job it writes to its place).
// The reaper's queries name the "running" partition, so they never meet
// these entries. PromoteScheduled (every server, about once a second)
// queries the due part of "scheduled", all of "after" (reading, with
// BatchGetItem, the jobs it has not seen yet and the jobs they run after
// that have not ended: a Store remembers what each waiting job runs after
// and which of those ended, see afterWait; each is decided with
// storekit.Decide), and the first entry not yet due (Promoted.Next); each
// job it queues gets its message first, then its state, on condition that
// it did not change since read, so a crash between the two leaves a
// message that finds the job still scheduled and either leases it (it is
// due and waits for no job) or comes back shortly (see setAside). A retry
// deletes its lease's message and is sent a new one when promoted.
//
// Why no message at enqueue, with DelaySeconds: SQS delays a message by
// at most 15 minutes, so a job days ahead would need its message received
// and hidden again every 12 hours; a promoted job must be ready at once
// (a promotion's clock may run ahead of SQS's); and the promotion writes
// the job anyway, for what lists and counts show. The price is that a job
// runs up to a promotion interval (a second) after its time.
//
// Enqueue refuses jobs after ones that do not exist (one BatchGetItem),
// writes the job, then adds it to each one's followers (an edit of its
// book each: there are no transactions to do it in the same write).
//
// Priorities: each priority but the default has an SQS queue of its own,
// the default one's name plus "-p1" (and so on), sharing its dead-letter
// queue, made by Provision or by the first enqueue of that priority (with
// AutoCreateQueues); that enqueue records the priority in the queue's settings
// item ("limit#" + queue). Dequeue reads that item (at most once a second
// per queue and server, unless the queue is limited) and polls the
// priority queues it names highest first without waiting, then long-polls
// the default one for at most 2 seconds; a queue that uses only the
// default priority is polled as before. Leases of one Dequeue are sorted
// by priority, then age.
//
// A queue's max_running is in the same settings item: the limit and the
// jobs holding its slots (job id and attempt, about 19 bytes each, so a
// limit of 10,000 fits an item). A lease of a limited queue takes a slot
// (a write conditional on the item's version) before the conditional
// lease, and gives it back if the lease fails; a slot whose job no longer
// runs that attempt is free, so nothing that ends a job writes the item.
// Dequeue counts the free slots first (pruning dead holders only when the
// slots look full) and receives no more messages than that; a message
// that finds no slot is hidden for a second. A Store that found a queue
// without a limit trusts that for a second: a limit set elsewhere holds
// here within it. Setting a limit on a queue that had none takes its
// running jobs (of its newest 5,000) as the first holders.
//
// Schedules are items "schedule#" + name, listed through by-time in
// partition "schedules" with created_key the name (so in name order);
// UpdateSchedule is a PutItem on condition of the revision read.
//
// Webhooks: a final job that owes them (notify_due, which
// storekit.Outcome.Apply sets) sits in the leases index in partition
// "notify" with lease_expires its notify_due. ClaimNotifications queries
// the due part, oldest first, and moves each job's notify_due and entry
// on condition that the entry is where it read it, so two servers never
// claim one job at once; RecordDeliveries rewrites the book and the entry.
//
// # Deleting jobs
//
// DeleteJob refuses a job not final (storekit.NotFinished: spool.ErrConflict)
// and, having no transactions, deletes in an order that a crash anywhere
// leaves retryable: the external job's entry in its source's record (out
// of the ids it lists and, if it is the newest, out of newest, on
// condition of the record's version: a record naming a job that does not
// exist would otherwise have it written again, as for an opening cut
// short, and sourceJob reads the record once more before doing so); the
// markers of the events it accepted that still name it (found through
// Accepted, read with BatchGetItem and deleted with BatchWriteItem: a
// marker of a missing job counts as none anyway, so this frees space) and
// its accepted events; its log's items (a keys-only query of its
// partition, deleted 25 a call); its request marker, on condition that it
// still names the job; and the job item last, on condition that it is a
// job in the final state read. Until then the job is there, final, and
// another DeleteJob does it all again. Watchers here wake at once; on
// other servers their poll finds the job gone.
//
// EndedBefore(t) queries the by-time index oldest first below
// created_key t (a job created at or after t cannot have ended before it),
// filtered to final states in DynamoDB, and reads the final ones found
// (BatchGetItem, strongly consistent) to check that they ended (their
// result's finished_at; updated_at, which a note moves, is not the end)
// before t.
// One call does at most endedRounds (5) queries of endedScan (200)
// entries. Each Store remembers the entry its last call examined last and
// goes on from there, starting over from the oldest once it reaches t: a
// front of old jobs that are not to go (a paused queue's backlog) longer
// than a call's work would otherwise hide every ended job behind it from
// the sweeper forever. Ids come oldest created first, a good enough
// stand-in for oldest ended.
//
// # Retention
//
// The retention sweeper (EndedBefore and DeleteJob) needs a server to run;
// DynamoDB's TTL does not. With Config.JobTTL (set by the server from its
// jobs retention; 0 keeps jobs), every write that makes a job final
// (Complete, Release, a settled expiry or dead letter, Cancel of a queued
// job, an ended external job, a job rejected at Enqueue) sets the item's
// ttl to that moment plus JobTTL, in Unix seconds, and nothing moves it
// after (a note changes updated_at, not when the job ended): DynamoDB
// deletes a job about when the sweeper would have. Jobs that are not
// final have no ttl, and jobs made final while JobTTL was 0 never get one
// (the sweeper deletes those).
// Provision, and deploy/aws/spool.yaml, turn TTL on for both tables on the
// same attribute name (dynalite cannot: Provision notes it).
//
// DynamoDB deletes what expired late (typically within days) and in no
// order, with none of DeleteJob's care, so what points at a job must not
// bring it back:
//
//   - A request marker gets ttl = its job's created_at plus JobTTL, never
//     later than the job's own, and a marker past its ttl counts as gone:
//     Enqueue's conditional PutItem replaces it (attribute_not_exists OR
//     ttl < now). Its job is gone or going; the price is that a request id
//     repeated more than JobTTL after its job was created, while that job
//     still runs, makes a second job.
//   - A source's record is kept (it carries the source's job count and
//     ids). When the job it names as newest is missing and was created
//     more than JobTTL ago, it expired: the source has no open job and the
//     next events open one. (A job whose opening was cut short is written
//     from the record within moments, so one that old never was.)
//   - Events and accepted-event markers keep their own ttl
//     (EventsTTLDays), and a marker whose job is missing counts as none.
package awsstore
