package spool

import (
	"fmt"
	"strings"
)

// Role is what an API key may do. The zero Role is no role at all
// ("unspecified").
type Role uint8

// The roles, from most to least powerful.
const (
	// RoleAdmin: everything, keys included.
	RoleAdmin Role = iota + 1
	// RoleSubmit: enqueue, cancel and read jobs.
	RoleSubmit
	// RoleRead: read jobs and their logs.
	RoleRead
	// RoleWorker: run jobs (lease them, optionally only from some
	// queues, heartbeat, publish output, complete them).
	RoleWorker
	// RoleIngest: send the logs of programs spool did not start, end
	// their sources, and nothing else.
	RoleIngest
)

var roleNames = [...]string{"unspecified", "admin", "submit", "read", "worker", "ingest"}

// Roles returns the roles from most to least powerful. The slice is the
// caller's.
func Roles() []Role { return []Role{RoleAdmin, RoleSubmit, RoleRead, RoleWorker, RoleIngest} }

// String is the role's short lower-case name ("worker"), the one the
// command line and the REST API use.
func (r Role) String() string {
	if int(r) < len(roleNames) {
		return roleNames[r]
	}
	return fmt.Sprintf("Role(%d)", uint8(r))
}

// MarshalText is the role's name.
func (r Role) MarshalText() ([]byte, error) { return []byte(r.String()), nil }

// UnmarshalText reads a role's name as ParseRole does.
func (r *Role) UnmarshalText(b []byte) error {
	v, err := ParseRole(string(b))
	if err != nil {
		return err
	}
	*r = v
	return nil
}

// ParseRole is the role named name: its short name ("submit", any case) or
// its wire name ("KEY_ROLE_SUBMIT"). Anything else is an error that wraps
// ErrInvalidArgument and lists the names.
func ParseRole(name string) (Role, error) {
	n := strings.TrimPrefix(strings.ToLower(strings.TrimSpace(name)), "key_role_")
	for _, r := range Roles() {
		if r.String() == n {
			return r, nil
		}
	}
	return 0, fmt.Errorf("%w: %q is not a role; use %s", ErrInvalidArgument, truncate(name, 40), names(Roles()))
}
