package sqlrows

// The spent ids (store.SpentStore): one row per id, with the time
// (Unix microseconds) until which it counts as spent.

// SpendOnce records an id (?1) as spent until ?2, unless it is spent
// already and its time has not passed (?3 is now): then it changes nothing
// and returns no row. The conflict decides, so of two servers spending one
// id at once exactly one gets the row.
const SpendOnce = `INSERT INTO spent (id, expires_at) VALUES (?, ?)
ON CONFLICT (id) DO UPDATE SET expires_at = excluded.expires_at WHERE spent.expires_at <= ?
RETURNING id`

// ForgetSpent deletes some ids whose time passed before ? (now): each
// spend forgets up to that many, more than it adds, so the table keeps
// only what is still needed without a sweep of its own.
const ForgetSpent = `DELETE FROM spent WHERE id IN (SELECT id FROM spent WHERE expires_at <= ? LIMIT 16)`

// Spent reads an id's time: spent while it is after now.
const Spent = `SELECT expires_at FROM spent WHERE id = ?`
