-- +goose Up

-- API keys: the public part of each and the SHA-256 of its secret, never
-- the secret. Times are Unix microseconds; queues is a JSON array.
CREATE TABLE keys (
    name         TEXT    PRIMARY KEY,
    hash         TEXT    NOT NULL UNIQUE,
    role         INTEGER NOT NULL,
    queues       TEXT    NOT NULL DEFAULT '[]',
    created_at   INTEGER NOT NULL,
    last_used_at INTEGER,
    revoked_at   INTEGER
);

-- +goose Down
DROP TABLE keys;
