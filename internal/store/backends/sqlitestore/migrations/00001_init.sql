-- +goose Up

-- One row per job. Times are Unix microseconds. The protobuf columns hold
-- what the server gave at enqueue (params, execution config) and the result.
CREATE TABLE jobs (
    job_id           TEXT    PRIMARY KEY,
    queue            TEXT    NOT NULL,
    state            INTEGER NOT NULL,
    request_id       TEXT    UNIQUE,           -- NULL when not given
    created_at       INTEGER NOT NULL,
    updated_at       INTEGER NOT NULL,
    attempt          INTEGER NOT NULL DEFAULT 0,
    max_attempts     INTEGER NOT NULL,
    cancel_requested INTEGER NOT NULL DEFAULT 0,
    lease_id         TEXT,                     -- kept after Complete, to recognise a repeat
    lease_expires_at INTEGER,
    next_sequence    INTEGER NOT NULL DEFAULT 1, -- the log's head
    next_line        INTEGER NOT NULL DEFAULT 1,
    params           BLOB    NOT NULL,
    execution        BLOB    NOT NULL,
    result           BLOB
);

-- Dequeue: the oldest ready jobs of a queue.
CREATE INDEX jobs_ready ON jobs (queue, state, created_at, job_id);
-- Lease expiry sweep.
CREATE INDEX jobs_leases ON jobs (state, lease_expires_at);
-- Listing newest first, in all queues or one.
CREATE INDEX jobs_newest ON jobs (created_at DESC, job_id DESC);
CREATE INDEX jobs_queue_newest ON jobs (queue, created_at DESC, job_id DESC);

-- A job's event log: one row per stored item (a batch of output lines or a
-- single event), keyed by its first sequence.
CREATE TABLE events (
    job_id     TEXT    NOT NULL,
    seq        INTEGER NOT NULL,
    end_seq    INTEGER NOT NULL,
    seek_line  INTEGER NOT NULL, -- see store.Item.SeekLine
    first_line INTEGER NOT NULL,
    line_count INTEGER NOT NULL,
    event_type INTEGER NOT NULL,
    attempt    INTEGER NOT NULL,
    ts         INTEGER NOT NULL, -- Unix milliseconds
    payload    BLOB    NOT NULL,
    PRIMARY KEY (job_id, seq)
);

-- Reading from a line: the first item whose seek_line reaches it, found
-- from the index alone.
CREATE INDEX events_seek_line ON events (job_id, seek_line, seq);

-- +goose Down
DROP TABLE events;
DROP TABLE jobs;
