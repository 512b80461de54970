package spool

import (
	"fmt"
	"strings"

	spoolv1 "github.com/spool-run/spool/gen/spool/v1"
)

// Roles lists what an API key may be, from most to least powerful:
// admin (everything, keys included), submit (enqueue, cancel and read
// jobs), read (jobs and their logs), worker (run jobs, optionally only
// those of some queues) and ingest (send the logs of programs spool did
// not start, and nothing else).
var Roles = []spoolv1.KeyRole{
	spoolv1.KeyRole_KEY_ROLE_ADMIN,
	spoolv1.KeyRole_KEY_ROLE_SUBMIT,
	spoolv1.KeyRole_KEY_ROLE_READ,
	spoolv1.KeyRole_KEY_ROLE_WORKER,
	spoolv1.KeyRole_KEY_ROLE_INGEST,
}

// RoleName is a role's short lower-case name ("worker"), the one the
// command line and the REST API use.
func RoleName(r spoolv1.KeyRole) string {
	if r == spoolv1.KeyRole_KEY_ROLE_UNSPECIFIED {
		return "unspecified"
	}
	return strings.ToLower(strings.TrimPrefix(r.String(), "KEY_ROLE_"))
}

// ParseRole is the role named name: its short name ("submit", any case) or
// its wire name ("KEY_ROLE_SUBMIT"). Anything else is an error that wraps
// ErrInvalidArgument and lists the names.
func ParseRole(name string) (spoolv1.KeyRole, error) {
	n := strings.TrimPrefix(strings.ToLower(strings.TrimSpace(name)), "key_role_")
	names := make([]string, len(Roles))
	for i, r := range Roles {
		if RoleName(r) == n {
			return r, nil
		}
		names[i] = RoleName(r)
	}
	return spoolv1.KeyRole_KEY_ROLE_UNSPECIFIED, fmt.Errorf("%w: %q is not a role; use %s", ErrInvalidArgument, truncate(name, 40), strings.Join(names, ", "))
}
