package awsstore

// The DynamoDB schema. doc.go explains what each part is for; Provision and
// deploy/aws/spool.yaml create it.

// Jobs table: one item per job (key job_id), plus one request marker per
// request_id (key "request#" + SHA-256 of the request id).
const (
	aJobID = "job_id" // S, partition key
	aKind  = "kind"   // S: kindJob or kindRequest
	// The job's fixed part (id, queue, params, execution config, request id,
	// max attempts, created_at) as a spoolv1.Job protobuf.
	aSpec = "spec" // B

	aQueue      = "queue"       // S, by-queue partition key
	aListPart   = "list_part"   // S, by-time partition key (always listPart)
	aCreatedKey = "created_key" // S, both listing indexes' sort key: createdKey()

	aState     = "state"      // N, spoolv1.JobState
	aAttempt   = "attempt"    // N, attempts started
	aUpdatedAt = "updated_at" // N, Unix microseconds
	aStartedAt = "started_at" // N, Unix microseconds: the last lease's start (an external job's creation)
	aCancel    = "cancel_requested"
	aResult    = "result" // B, spoolv1.JobResult once final
	// B, storekit.Bookkeeping: retried and released attempts, run_after,
	// cancel reason, notes, rerun links. Absent until a lease ends or a
	// note or link is added, unless the job is a rerun (rerun_of).
	aBook = "book"
	// aJobTTL is, with Config.JobTTL set, when DynamoDB may delete a final
	// job (and, on a request marker, the marker): Unix seconds. The events
	// table's ttl has the same name, so one TTL setting serves both.
	aJobTTL = aTTL

	// The current lease: the SQS receipt handle it was granted with, its
	// message id and when it runs out. lease_part is set only while the job
	// runs, which makes the leases index sparse.
	aLeaseID      = "lease_id"      // S
	aLeaseExpires = "lease_expires" // N, Unix microseconds, leases sort key
	aLeasePart    = "lease_part"    // S, leases partition key (always leasePart)
	aMessageID    = "msg_id"        // S

	// The log's committed head, a pending reservation past it (an Ingest
	// call's, or an Append's of an older version), and the abandoned
	// reservations (holes) readers skip: see doc.go.
	aNextSeq  = "next_seq"  // N
	aNextLine = "next_line" // N
	aResSeq   = "res_seq"   // N
	aResLine  = "res_line"  // N
	aResLease = "res_lease" // S: the lease id of an Append, the token of an Ingest call
	aResAt    = "res_at"    // N, Unix microseconds: when the reservation was made or last renewed
	aHoles    = "holes"     // L of [from, to) pairs
	// The attempts whose event items are keyed apart (every attempt after
	// the first): where each began. See keyBase.
	aSpans = "spans" // L of [attempt, from] pairs

	// rev counts changes readers care about; watchers on other servers
	// poll it.
	aRev = "rev" // N
	// watched_until: until when some replica has followers of the job
	// (Unix microseconds); see shares.
	aWatchedUntil = "watched_until" // N

	// Request markers.
	aRequestID = "request_id" // S, as given
	aTarget    = "target"     // S, the job id it created
	aMadeAt    = "made_at"    // N, Unix microseconds
	aJob       = "job"        // B, the job as first created (spoolv1.Job)
	// The job's sealed secrets (store.NewJob.Secrets), on the job item and
	// on its request marker (which a finished enqueue is rebuilt from).
	// Absent for a job without secrets; only JobSecrets reads them.
	aSecrets = "secrets" // B

	kindJob     = "job"
	kindRequest = "request"
	listPart    = "jobs"
	leasePart   = "running"
	// The leases index holds, beside running jobs, the jobs that wait in
	// other ways, each kind in a partition of its own, with lease_expires
	// the time it waits for (see place): the reaper's queries name the
	// running partition, so they never meet these.
	scheduledPart = "scheduled" // SCHEDULED, waiting for run_after only
	afterPart     = "after"     // SCHEDULED, waiting for other jobs (lease_expires: run_after, 0 if none)
	notifyPart    = "notify"    // final, owing webhooks (lease_expires: notify_due)

	requestKeyPrefix = "request#"
)

// Jobs table indexes.
const (
	// Newest-first listing of one queue: queue + created_key.
	indexByQueue = "by-queue"
	// Newest-first listing of every queue: list_part + created_key.
	indexByTime = "by-time"
	// Running jobs by lease expiry: lease_part + lease_expires.
	indexLeases = "leases"
)

// Events table: one item per stored event (a batch is one item).
const (
	aSequence  = "sequence"   // N, sort key: the event's (first) sequence, plus keyBase of its attempt
	aEndSeq    = "end_seq"    // N, its last sequence
	aEventType = "event_type" // N, spoolv1.EventType
	aPayload   = "payload"    // B, events.Encode output
	aTTL       = "ttl"        // N, Unix seconds
	aFirstLine = "first_line" // N, output items only
	aLastLine  = "last_line"  // N, output items only: by-line sort key
	aTime      = "ts"         // N, the event's timestamp, Unix milliseconds

	// by-line is a local index of output items by their last line, so a
	// read from line L finds its first item with one strongly consistent
	// query. Items without output lack last_line and stay out of it.
	indexByLine = "by-line"
)

// Scatters. A scatter's record is a jobs-table item under "scatter#" + its
// id, listed through the by-time index: list_part is scattersActivePart or
// scattersInactivePart (following active), created_key the scatter id.
// Each batch's items are events-table items under "scatter#" + id + "#b#"
// + batch index, one per chunk of at most scatterChunkBytes, the chunk
// number as sequence and the bytes as payload.
const (
	aVersion = "version" // N, the record's version: UpdateScatter's compare-and-set
	aActive  = "active"  // BOOL, store.ScatterRecord.Active
	aRecord  = "record"  // B, storekit.EncodeScatter: the scatter and its bookkeeping
	aChunks  = "chunks"  // N, on every chunk: how many chunks its batch has

	kindScatter          = "scatter"
	scatterKeyPrefix     = "scatter#"
	scattersActivePart   = "scatters-active"
	scattersInactivePart = "scatters-inactive"
)

// Ingested logs (see doc.go). A source's record is a jobs-table item under
// "source#" + hex SHA-256 of the source, with version (N: how many jobs the
// source has had, the compare-and-set that opens the next) and job (B: its
// newest job as created). An external job's item is an ordinary job item
// with lease_id store.ExternalLease, no lease expiry and src_ord. In the
// events table, each accepted event has a marker under "seen#" + the
// source's hash + "#" + its id (sequence 0), and each Ingest call's
// accepted events are kept under "accepted#" + job id, in chunks.
const (
	aSource = "source" // S, on a record: the source as given
	aNewest = "newest" // S, on a record: the id of the source's newest job
	aJobs   = "jobs"   // L of S, on a record: its job ids, newest first, at most sourceJobsKept
	// N: on an external job, the version of its source's record that
	// opened it; on a marker, that of the job it points to.
	aSrcOrd = "src_ord"
	aGroup  = "group" // N, on a marker: where the Ingest call that wrote it began (its reservation)
	aLine   = "line"  // N, on a marker: the event's first line

	kindSource        = "source"
	sourceKeyPrefix   = "source#"
	seenKeyPrefix     = "seen#"
	acceptedKeyPrefix = "accepted#"
)

// Queues (see doc.go, Queues). The registry, one jobs-table item, lists
// every queue that has had a job or a pause; a paused queue has an item of
// its own, under "queue#" + its name, which resuming deletes.
const (
	aNames    = "names"     // SS, on the registry: queue names
	aPausedAt = "paused_at" // N, Unix microseconds, on a pause item: the first pause

	kindQueues     = "queues"
	kindQueue      = "queue"
	queuesKey      = "queues#registry"
	queueKeyPrefix = "queue#"
)

// A queue's settings are an item of its own, under "limit#" + its name
// (see limits.go): its max_running, the jobs that hold its slots, and the
// priorities its jobs used (see priority.go).
const (
	aMax        = "max"        // N: the queue's max_running (0: none)
	aHolders    = "holders"    // B: encodeHolders, job id -> attempt
	aPriorities = "priorities" // NS: the priorities other than the default its jobs used

	kindLimit      = "limit"
	limitKeyPrefix = "limit#"
)

// Schedules are items under "schedule#" + name, listed through by-time in
// partition schedulesPart with created_key the name (byte order).
const (
	aSchedule = "schedule" // B: spoolv1.Schedule
	// aRevision is the schedule's revision: UpdateSchedule's compare-and-set.
	aRevision = "revision" // N

	kindSchedule      = "schedule"
	scheduleKeyPrefix = "schedule#"
	schedulesPart     = "schedules"
)
