-- +goose Up

-- One row per scatter. version and active are columns because they are
-- queried (the compare-and-set of UpdateScatter, the listing of the
-- scatters still to drive); the rest of the record is one bytea
-- (storekit.EncodeScatter). The id compares byte by byte (COLLATE "C"):
-- UUIDv7 strings then sort by time whatever the database's locale, as in
-- the other stores, and comparing costs less.
CREATE TABLE scatters (
    scatter_id text    COLLATE "C" PRIMARY KEY,
    version    bigint  NOT NULL,
    active     boolean NOT NULL,
    record     bytea   NOT NULL
);

-- Listing the active scatters newest first, without reading the finished
-- ones, which soon far outnumber them. (The listing of all of them reads
-- the primary key's index.)
CREATE INDEX scatters_active ON scatters (scatter_id) WHERE active;

-- The items of each batch of a scatter (a JSON array), written once with
-- the scatter and read when the batch's job runs.
CREATE TABLE scatter_batches (
    scatter_id  text    COLLATE "C" NOT NULL,
    batch_index integer NOT NULL,
    items       bytea   NOT NULL,
    PRIMARY KEY (scatter_id, batch_index)
);

-- +goose Down
DROP TABLE scatter_batches;
DROP TABLE scatters;
