// Package scatter holds the rules of a scatter: what a scatter may be and
// how it is recorded (spec.go), the ids and the jobs of its batches
// (members.go), and how it moves on, a round at a time (round.go: what a
// round decides, from the record and the jobs of its batches; driver.go:
// a round read, written and acted on, over the store; redrive.go: what a
// redrive of an ended scatter runs again).
//
// The service core checks who may create, read, cancel or redrive a
// scatter and calls these rules; the server's maintenance loop
// (internal/maintenance) runs the driver's rounds, woken by the core's
// kicks and by a timer.
package scatter

import (
	"github.com/spool-run/spool"
	"github.com/spool-run/spool/internal/apierr"
)

// invalid is a request's mistake, told to its sender.
func invalid(format string, args ...any) error {
	return apierr.Errorf(spool.ErrInvalidArgument, format, args...)
}
