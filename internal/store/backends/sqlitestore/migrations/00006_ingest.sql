-- +goose Up

-- The logs of programs spool did not start (store.IngestStore). An
-- external job's row names its source; every other job's has NULL, so the
-- partial indexes below hold external jobs alone and cost the jobs spool
-- runs nothing.
ALTER TABLE jobs ADD COLUMN source TEXT;

-- Listing a source's jobs newest first, in all states or in one: without
-- the second, a listing of a source's jobs in one state would read that
-- state's jobs of every source, or every state's jobs of the source.
CREATE INDEX jobs_source_newest ON jobs (source, created_at DESC, job_id DESC) WHERE source IS NOT NULL;
CREATE INDEX jobs_source_state_newest ON jobs (source, state, created_at DESC, job_id DESC) WHERE source IS NOT NULL;

-- A source has at most one open (RUNNING = 2) job. Writes here are
-- serialized, so Ingest's lookup inside its transaction already keeps
-- that; the index makes a second one an error all the same, as in
-- PostgreSQL, where servers race to create a source's job.
CREATE UNIQUE INDEX jobs_open_source ON jobs (source) WHERE source IS NOT NULL AND state = 2;

-- Every event accepted for an external job, as it came: where its lines
-- went (line, lines) and the sequence at which the call that accepted it
-- began (grp), from which the log can be laid out again. The key is the
-- source's, not the job's: an id accepted for any job of the source is a
-- duplicate. The message is a BLOB because a log line may hold any bytes.
CREATE TABLE accepted (
    source   TEXT    NOT NULL,
    event_id TEXT    NOT NULL,
    job_id   TEXT    NOT NULL,
    line     INTEGER NOT NULL,
    lines    INTEGER NOT NULL,
    grp      INTEGER NOT NULL,
    ts       INTEGER NOT NULL, -- Unix milliseconds
    message  BLOB    NOT NULL,
    PRIMARY KEY (source, event_id)
);

-- A job's accepted events in line order (Accepted reads them a page at a
-- time), and all of them when the job goes.
CREATE INDEX accepted_job_line ON accepted (job_id, line);

-- +goose Down
DROP TABLE accepted;
DROP INDEX jobs_open_source;
DROP INDEX jobs_source_state_newest;
DROP INDEX jobs_source_newest;
ALTER TABLE jobs DROP COLUMN source;
