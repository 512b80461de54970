-- +goose Up

-- One row per scatter. version and active are columns because they are
-- queried (the compare-and-set of UpdateScatter, the listing of the
-- scatters still to drive); the rest of the record is one blob
-- (storekit.EncodeScatter).
CREATE TABLE scatters (
    scatter_id TEXT    PRIMARY KEY, -- a UUIDv7: ordered by time
    version    INTEGER NOT NULL,
    active     INTEGER NOT NULL,
    record     BLOB    NOT NULL
);

-- Listing the active scatters newest first, without reading the finished
-- ones, which soon far outnumber them. (The listing of all of them reads
-- the primary key's index.)
CREATE INDEX scatters_active ON scatters (scatter_id) WHERE active;

-- The items of each batch of a scatter (a JSON array), written once with
-- the scatter and read when the batch's job runs.
CREATE TABLE scatter_batches (
    scatter_id  TEXT    NOT NULL,
    batch_index INTEGER NOT NULL,
    items       BLOB    NOT NULL,
    PRIMARY KEY (scatter_id, batch_index)
);

-- +goose Down
DROP TABLE scatter_batches;
DROP TABLE scatters;
