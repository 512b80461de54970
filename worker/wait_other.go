//go:build !linux

package worker

// awaitExit cannot wait without reaping here: the caller reaps first.
func awaitExit(int) bool { return false }
