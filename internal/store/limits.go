package store

// Listing and dequeue bounds, the same for every backend.
const (
	DefaultListLimit = 50
	MaxListLimit     = 1000
	MaxDequeue       = 500
)

// ListLimit turns a requested page size into the one to use.
func ListLimit(n int) int {
	switch {
	case n <= 0:
		return DefaultListLimit
	case n > MaxListLimit:
		return MaxListLimit
	}
	return n
}

// DequeueLimit turns a requested batch of leases into the one to use.
func DequeueLimit(n int) int {
	return min(max(n, 1), MaxDequeue)
}
