package cli

import "github.com/google/uuid"

// newRequestID is a request id for a job the user gave none for: random,
// so it names this one command's job and nothing else.
func newRequestID() string { return "cli-" + uuid.NewString() }
