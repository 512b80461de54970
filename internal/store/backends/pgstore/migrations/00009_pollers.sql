-- +goose Up

-- The workers that polled each server lately, by queue (a JSON object of
-- queue name to worker names), as the server last recorded them, so any
-- server can count a queue's workers whichever server they poll.
ALTER TABLE servers ADD COLUMN pollers jsonb, ADD COLUMN pollers_at bigint;

-- +goose Down
ALTER TABLE servers DROP COLUMN pollers, DROP COLUMN pollers_at;
