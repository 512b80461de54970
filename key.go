package spool

import "time"

// Key is an API key as spool keeps it: never its secret.
type Key struct {
	// Name is the key's unique name, for people and the audit log.
	Name string
	Role Role
	// Queues limit a worker key to these queues (empty: any).
	Queues    []string
	CreatedAt time.Time
	// LastUsedAt is when the key was last used (kept to about a minute).
	LastUsedAt time.Time
	// RevokedAt is when the key was revoked (zero while it works).
	RevokedAt time.Time
}
