-- +goose Up

-- One row per job. Times are Unix microseconds (the same clock the servers
-- use for leases: keep their clocks in step). The bytea columns hold
-- protobuf: what the server gave at enqueue (params, execution config),
-- the result, and the rest of the bookkeeping (retried and released
-- attempts, cancel reason, notes).
CREATE TABLE jobs (
    job_id           text     PRIMARY KEY,
    queue            text     NOT NULL,
    state            integer  NOT NULL,
    request_id       text     UNIQUE,            -- NULL when not given
    created_at       bigint   NOT NULL,
    updated_at       bigint   NOT NULL,
    attempt          integer  NOT NULL DEFAULT 0,
    max_attempts     integer  NOT NULL,
    retries          integer  NOT NULL DEFAULT 0,
    cancel_requested boolean  NOT NULL DEFAULT false,
    lease_id         text,                       -- kept after Complete, to recognise a repeat
    lease_expires_at bigint,
    run_after        bigint,                     -- a retried job waits until then
    next_sequence    bigint   NOT NULL DEFAULT 1, -- the log's head
    next_line        bigint   NOT NULL DEFAULT 1,
    params           bytea    NOT NULL,
    execution        bytea    NOT NULL,
    result           bytea,
    book             bytea
);

-- Dequeue: the oldest ready jobs of a queue.
CREATE INDEX jobs_ready ON jobs (queue, state, created_at, job_id);
-- Lease expiry sweep.
CREATE INDEX jobs_leases ON jobs (state, lease_expires_at);
-- Listing newest first: in all queues, in one, in one state.
CREATE INDEX jobs_newest ON jobs (created_at DESC, job_id DESC);
CREATE INDEX jobs_queue_newest ON jobs (queue, created_at DESC, job_id DESC);
CREATE INDEX jobs_state_newest ON jobs (state, created_at DESC, job_id DESC);

-- A job's event log: one row per stored item (a batch of output lines or a
-- single event), keyed by its first sequence.
CREATE TABLE events (
    job_id     text     NOT NULL,
    seq        bigint   NOT NULL,
    end_seq    bigint   NOT NULL,
    seek_line  bigint   NOT NULL, -- the first line a read from a line may start at
    first_line bigint   NOT NULL,
    line_count integer  NOT NULL,
    event_type integer  NOT NULL,
    attempt    integer  NOT NULL,
    ts         bigint   NOT NULL, -- Unix milliseconds
    payload    bytea    NOT NULL,
    PRIMARY KEY (job_id, seq)
);

-- Reading from a line: the first item whose seek_line reaches it.
CREATE INDEX events_seek_line ON events (job_id, seek_line, seq);

-- API keys: the public part of each and the SHA-256 of its secret, never
-- the secret. queues is a JSON array.
CREATE TABLE keys (
    name         text    PRIMARY KEY,
    hash         text    NOT NULL UNIQUE,
    role         integer NOT NULL,
    queues       text    NOT NULL DEFAULT '[]',
    created_at   bigint  NOT NULL,
    last_used_at bigint,
    revoked_at   bigint
);

-- The servers sharing the database, each seen every few seconds while it
-- runs: a server that starts when none was seen lately knows that nobody
-- kept the leases' time meanwhile.
CREATE TABLE servers (
    id         text   PRIMARY KEY,
    started_at bigint NOT NULL,
    seen_at    bigint NOT NULL
);

-- +goose Down
DROP TABLE servers;
DROP TABLE keys;
DROP TABLE events;
DROP TABLE jobs;
