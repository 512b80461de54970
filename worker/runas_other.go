//go:build !linux

package worker

import "errors"

// canRunAs says why commands cannot be run as another user here: spool
// does it on Linux only.
func canRunAs() error {
	return errors.New("works on Linux only; on this system, run the worker itself as the user jobs should run as")
}
