-- +goose Up

-- When the job's current (or last) attempt started: set by every lease, so
-- a retried job shows its last start; an external job starts when it is
-- created. NULL until then, and for jobs leased before this column came.
ALTER TABLE jobs ADD COLUMN started_at INTEGER;

-- When the job ended (became final): written only by the write that makes
-- it final, with that write's updated_at, and NULL while it is queued or
-- running. Retention and QueueStats count from it, not from updated_at,
-- which a later note still moves. The jobs that had ended before this
-- column came ended, as far as anyone can tell now, at their last change.
ALTER TABLE jobs ADD COLUMN ended_at INTEGER;
UPDATE jobs SET ended_at = updated_at WHERE state IN (3, 4, 5);

-- The paused queues, since when: a queue has a row here only while it is
-- paused. A queue is otherwise just a name its jobs carry.
CREATE TABLE queues (
    name      TEXT    PRIMARY KEY,
    paused_at INTEGER NOT NULL
);

-- The final jobs (SUCCEEDED = 3, FAILED = 4, CANCELLED = 5) of each final
-- state by their end: the retention sweep takes the oldest of each from
-- its start, and QueueStats counts those that ended since a time from a
-- point in it, so neither reads the jobs that ended long ago nor those
-- still queued or running (which are not in it, so their updates never
-- touch it). The queries repeat the predicate as written here
-- (sqlrows.FinalStates): SQLite uses a partial index only for a query
-- with a term that is its predicate. Made after the UPDATE above, so it
-- is built once rather than changed row by row.
CREATE INDEX jobs_ended ON jobs (state, ended_at) WHERE state IN (3, 4, 5);

-- +goose Down
DROP INDEX jobs_ended;
DROP TABLE queues;
ALTER TABLE jobs DROP COLUMN ended_at;
ALTER TABLE jobs DROP COLUMN started_at;
