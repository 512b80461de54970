-- +goose Up

-- When any server's reaper last swept the leases (one row, from the first
-- sweep on). A sweep that finds it older than a few sweeps' interval knows
-- that no server reached the database meanwhile, nor any worker's
-- heartbeat, and gives the running leases that were alive then time to be
-- renewed before it settles any (store.Sweep).
CREATE TABLE sweeps (
    one      boolean PRIMARY KEY DEFAULT true CHECK (one),
    swept_at bigint  NOT NULL
);

-- +goose Down
DROP TABLE sweeps;
