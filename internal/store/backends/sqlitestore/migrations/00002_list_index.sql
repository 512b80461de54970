-- +goose Up

-- Listing by state, newest first, in all queues: without it, a listing of
-- a rare state (the one failed job among a million that succeeded) read
-- every job. With a queue, jobs_ready serves the same purpose.
CREATE INDEX jobs_state_newest ON jobs (state, created_at DESC, job_id DESC);

-- +goose Down
DROP INDEX jobs_state_newest;
