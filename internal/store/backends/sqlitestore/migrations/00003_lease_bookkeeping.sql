-- +goose Up

-- What ending a lease changes beyond state and result: retries allowed, the
-- time a retried job waits for (a column, for Dequeue), and the rest of the
-- bookkeeping (retried and released attempts, cancel reason, notes) as one
-- protobuf message.
ALTER TABLE jobs ADD COLUMN retries INTEGER NOT NULL DEFAULT 0;
ALTER TABLE jobs ADD COLUMN run_after INTEGER;
ALTER TABLE jobs ADD COLUMN book BLOB;

-- +goose Down
ALTER TABLE jobs DROP COLUMN book;
ALTER TABLE jobs DROP COLUMN run_after;
ALTER TABLE jobs DROP COLUMN retries;
