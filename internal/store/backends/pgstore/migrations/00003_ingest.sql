-- +goose Up

-- The logs of programs spool did not start (store.IngestStore). An
-- external job's row names its source; every other job's has NULL, so the
-- partial indexes below hold external jobs alone and cost the jobs spool
-- runs nothing. Adding a column that may be NULL rewrites no rows.
ALTER TABLE jobs ADD COLUMN source text;

-- Listing a source's jobs newest first, in all states or in one: without
-- the second, a listing of a source's jobs in one state would read that
-- state's jobs of every source, or every state's jobs of the source.
CREATE INDEX jobs_source_newest ON jobs (source, created_at DESC, job_id DESC) WHERE source IS NOT NULL;
CREATE INDEX jobs_source_state_newest ON jobs (source, state, created_at DESC, job_id DESC) WHERE source IS NOT NULL;

-- A source has at most one open (RUNNING = 2) job, whichever server
-- ingests its events. Ingest locks the open job's row, so two servers
-- adding to one job take turns; but when the source has no open job there
-- is no row to lock, and both may create one. This index lets only the
-- first commit: the other's insert fails with a unique violation, and its
-- transaction starts over and finds the first one's job.
CREATE UNIQUE INDEX jobs_open_source ON jobs (source) WHERE source IS NOT NULL AND state = 2;

-- Every event accepted for an external job, as it came: where its lines
-- went (line, lines) and the sequence at which the call that accepted it
-- began (grp), from which the log can be laid out again. The key is the
-- source's, not the job's: an id accepted for any job of the source is a
-- duplicate. The message is bytea because a log line may hold any bytes,
-- and text refuses some (NUL, invalid UTF-8).
CREATE TABLE accepted (
    source   text    NOT NULL,
    event_id text    NOT NULL,
    job_id   text    NOT NULL,
    line     bigint  NOT NULL,
    lines    bigint  NOT NULL,
    grp      bigint  NOT NULL,
    ts       bigint  NOT NULL, -- Unix milliseconds
    message  bytea   NOT NULL,
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
