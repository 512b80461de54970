-- +goose Up

-- Ids used up before their time ran out: WebSocket tickets, which open one
-- stream once, and sessions signed out of. expires_at (Unix microseconds)
-- is when the token itself expires; after it the row is of no use, and
-- spending deletes such rows a few at a time (by the index).
CREATE TABLE spent (
    id         text   PRIMARY KEY,
    expires_at bigint NOT NULL
);
CREATE INDEX spent_expires ON spent (expires_at);

-- +goose Down
DROP TABLE spent;
