-- +goose Up

-- A job's secrets, sealed by the server (AES-GCM under a key derived from
-- its token key, the job's id as additional data): what a dump of the
-- database holds of them is ciphertext. NULL for a job without secrets
-- (adding a column that may be NULL rewrites no rows). Only the lease of
-- the job and a rerun read the column; no listing or read of a job
-- selects it.
ALTER TABLE jobs ADD COLUMN secrets bytea;

-- +goose Down
ALTER TABLE jobs DROP COLUMN secrets;
