-- +goose Up

-- When the job's current (or last) attempt started: set by every lease, so
-- a retried job shows its last start; an external job starts when it is
-- created. NULL until then, and for jobs leased before this column came.
ALTER TABLE jobs ADD COLUMN started_at INTEGER;

-- The paused queues, since when: a queue has a row here only while it is
-- paused. A queue is otherwise just a name its jobs carry.
CREATE TABLE queues (
    name      TEXT    PRIMARY KEY,
    paused_at INTEGER NOT NULL
);

-- The final jobs (SUCCEEDED = 3, FAILED = 4, CANCELLED = 5) of each final
-- state by their last change: the retention sweep takes the oldest of
-- each from its start, and QueueStats counts those that ended since a time
-- from a point in it, so neither reads the jobs that ended long ago nor
-- those still queued or running (which are not in it, so their updates
-- never touch it). The queries repeat the predicate as written here
-- (sqlrows.FinalStates): SQLite uses a partial index only for a query with
-- a term that is its predicate.
CREATE INDEX jobs_ended ON jobs (state, updated_at) WHERE state IN (3, 4, 5);

-- +goose Down
DROP INDEX jobs_ended;
DROP TABLE queues;
ALTER TABLE jobs DROP COLUMN started_at;
