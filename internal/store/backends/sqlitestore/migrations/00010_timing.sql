-- +goose Up

-- When jobs run. A job's priority (1 runs first) is a column, read by the
-- lease's ORDER BY. notify_due is when the job's webhooks are owed (NULL:
-- nothing owed): set by the write that makes a job with notify URLs final,
-- moved forward by a notifier's claim, cleared once every delivery is
-- settled.
ALTER TABLE jobs ADD COLUMN priority INTEGER NOT NULL DEFAULT 2;
ALTER TABLE jobs ADD COLUMN notify_due INTEGER;

-- Leasing hands out a queue's queued (1) jobs by priority, then oldest
-- first, read in that order from here. The lease's statement has the term
-- state = 1 as written here: SQLite uses a partial index only then.
-- jobs_ready stays, for listings of a queue's jobs in a state.
CREATE INDEX jobs_queued ON jobs (queue, priority, created_at, job_id) WHERE state = 1;

-- The SCHEDULED (6) jobs by the time they wait for, which promotion reads
-- about once a second, and the jobs that owe webhooks, by when. The state
-- leads jobs_scheduled, though every entry has the same: without it SQLite
-- (which keeps no statistics here) would rather search jobs_state_newest
-- by the state's equality than this index by a range of times.
CREATE INDEX jobs_scheduled ON jobs (state, run_after) WHERE state = 6;
CREATE INDEX jobs_notify_due ON jobs (notify_due) WHERE notify_due IS NOT NULL;

-- The jobs a SCHEDULED job runs after, one row each, in the order it
-- named them (pos). A job's rows go when it leaves SCHEDULED and when it
-- is deleted; a deleted parent's rows stay, so that its followers find it
-- gone.
CREATE TABLE job_after (
    job_id   TEXT    NOT NULL,
    after_id TEXT    NOT NULL,
    pos      INTEGER NOT NULL,
    PRIMARY KEY (job_id, after_id)
) WITHOUT ROWID;

-- The periodic schedules: the Schedule message whole, and its revision,
-- which an update compares and sets.
CREATE TABLE schedules (
    name     TEXT    PRIMARY KEY,
    revision INTEGER NOT NULL,
    schedule BLOB    NOT NULL
);

-- A queue's row now also holds its limit on running jobs (NULL: none), so
-- a queue has a row while it is paused or has a limit, and paused_at is
-- NULL while it is not paused. SQLite cannot drop a NOT NULL: the table
-- is made again.
CREATE TABLE queues_new (
    name        TEXT    PRIMARY KEY,
    paused_at   INTEGER,
    max_running INTEGER
);
INSERT INTO queues_new (name, paused_at) SELECT name, paused_at FROM queues;
DROP TABLE queues;
ALTER TABLE queues_new RENAME TO queues;

-- +goose Down
CREATE TABLE queues_old (
    name      TEXT    PRIMARY KEY,
    paused_at INTEGER NOT NULL
);
INSERT INTO queues_old (name, paused_at) SELECT name, paused_at FROM queues WHERE paused_at IS NOT NULL;
DROP TABLE queues;
ALTER TABLE queues_old RENAME TO queues;
DROP TABLE schedules;
DROP TABLE job_after;
DROP INDEX jobs_notify_due;
DROP INDEX jobs_scheduled;
DROP INDEX jobs_queued;
ALTER TABLE jobs DROP COLUMN notify_due;
ALTER TABLE jobs DROP COLUMN priority;
