-- +goose Up

-- When jobs run. A job's priority (1 runs first) is a column, read by the
-- lease's ORDER BY; adding it with a constant default rewrites no rows.
-- notify_due is when the job's webhooks are owed (NULL: nothing owed): set
-- by the write that makes a job with notify URLs final, moved forward by
-- a notifier's claim, cleared once every delivery is settled.
ALTER TABLE jobs ADD COLUMN priority integer NOT NULL DEFAULT 2, ADD COLUMN notify_due bigint;

-- The jobs a SCHEDULED job runs after, one row each, in the order it
-- named them (pos): promotion and the cancelling of a job whose parent
-- failed are statements over this table, not a decoding of every waiting
-- job's bookkeeping. A job's rows go when it leaves SCHEDULED (promoted or
-- cancelled) and when it is deleted; a deleted parent's rows stay, so that
-- its followers find it gone.
CREATE TABLE job_after (
    job_id   text    NOT NULL,
    after_id text    NOT NULL,
    pos      integer NOT NULL,
    PRIMARY KEY (job_id, after_id)
);

-- The periodic schedules: the Schedule message whole, and its revision,
-- which an update compares and sets. The name compares byte by byte, so
-- every store lists them in one order.
CREATE TABLE schedules (
    name     text   COLLATE "C" PRIMARY KEY,
    revision bigint NOT NULL,
    schedule bytea  NOT NULL
);

-- A queue's row now also holds its limit on running jobs (NULL: none), so
-- a queue has a row while it is paused or has a limit: paused_at is NULL
-- while it is not paused.
ALTER TABLE queues ALTER COLUMN paused_at DROP NOT NULL, ADD COLUMN max_running integer;

-- +goose Down
ALTER TABLE queues DROP COLUMN max_running;
DELETE FROM queues WHERE paused_at IS NULL;
ALTER TABLE queues ALTER COLUMN paused_at SET NOT NULL;
DROP TABLE schedules;
DROP TABLE job_after;
ALTER TABLE jobs DROP COLUMN notify_due, DROP COLUMN priority;
