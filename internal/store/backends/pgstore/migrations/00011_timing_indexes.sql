-- +goose NO TRANSACTION
-- +goose Up

-- Leasing hands out a queue's jobs by priority, then oldest first: the
-- partial index of queued jobs leads with the priority after the queue,
-- so the lease reads its jobs in order and stops at its limit. It replaces
-- jobs_queued, made for the order without priority.
CREATE INDEX CONCURRENTLY IF NOT EXISTS jobs_queued_priority ON jobs (queue, priority, created_at, job_id) WHERE state = 1;
DROP INDEX CONCURRENTLY IF EXISTS jobs_queued;

-- The SCHEDULED (6) jobs by the time they wait for: each server's
-- promotion, about once a second, reads those due and the next time from
-- here, touching no other job. The statements write state = 6 into their
-- text (see leases.go).
CREATE INDEX CONCURRENTLY IF NOT EXISTS jobs_scheduled ON jobs (run_after) WHERE state = 6;

-- The jobs that owe webhooks, by when: a notifier's claim reads the due
-- ones from here; the rest of the jobs are not in it.
CREATE INDEX CONCURRENTLY IF NOT EXISTS jobs_notify_due ON jobs (notify_due) WHERE notify_due IS NOT NULL;

-- +goose Down
DROP INDEX CONCURRENTLY IF EXISTS jobs_notify_due;
DROP INDEX CONCURRENTLY IF EXISTS jobs_scheduled;
CREATE INDEX CONCURRENTLY IF NOT EXISTS jobs_queued ON jobs (queue, created_at, job_id) WHERE state = 1;
DROP INDEX CONCURRENTLY IF EXISTS jobs_queued_priority;
