-- +goose Up

-- When the job's current (or last) attempt started: set by every lease, so
-- a retried job shows its last start; an external job starts when it is
-- created. NULL until then, and for jobs leased before this column came
-- (adding a column that may be NULL rewrites no rows).
ALTER TABLE jobs ADD COLUMN started_at bigint;

-- When the job ended (became final): written only by the write that makes
-- it final, with that write's updated_at, and NULL while it is queued or
-- running. Retention and QueueStats count from it rather than from
-- updated_at, which is not indexed: every append to a running job's log
-- moves updated_at, and an update that changes no indexed column can stay
-- heap-only (HOT), adding no index entries. The write that sets ended_at
-- changes state, an indexed column, so it was never HOT anyway. The jobs
-- that had ended before this column came ended, as far as anyone can tell
-- now, at their last change; the UPDATE writes a new version of each of
-- their rows, once.
ALTER TABLE jobs ADD COLUMN ended_at bigint;
UPDATE jobs SET ended_at = updated_at WHERE state IN (3, 4, 5);

-- The paused queues, since when: a queue has a row here only while it is
-- paused. A queue is otherwise just a name its jobs carry.
CREATE TABLE queues (
    name      text   PRIMARY KEY,
    paused_at bigint NOT NULL
);

-- The final jobs (SUCCEEDED = 3, FAILED = 4, CANCELLED = 5) of each final
-- state by their end: the retention sweep takes the oldest of each from
-- its start, and QueueStats counts those that ended since a time from a
-- point in it, so neither reads the jobs that ended long ago nor those
-- still queued or running. The queries, shared with SQLite, repeat the
-- predicate as written here (sqlrows.FinalStates). Made after the UPDATE
-- above, so it is built once rather than changed row by row.
CREATE INDEX jobs_ended ON jobs (state, ended_at) WHERE state IN (3, 4, 5);

-- +goose Down
DROP INDEX jobs_ended;
DROP TABLE queues;
ALTER TABLE jobs DROP COLUMN ended_at;
ALTER TABLE jobs DROP COLUMN started_at;
