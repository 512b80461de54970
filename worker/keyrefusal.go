package worker

import (
	"errors"
	"fmt"

	"connectrpc.com/connect"

	"github.com/spool-run/spool"
)

// A key that is missing, wrong, revoked or without the right stays so:
// every later call would be refused too, and a worker that went on would
// run commands whose output and results go nowhere. So the first refusal
// of any call (a lease, a heartbeat, output, a result, a job's input)
// stops the worker: its commands are stopped, nothing more is sent, and
// Run returns the error. Output not yet sent stays in the spool directory:
// a worker started on it again with a key the server takes delivers it
// and hands the jobs back.

// isKeyRefusal reports whether err is the server refusing the key
// (Unauthenticated: unknown, revoked or none; PermissionDenied: not a
// worker's, or not for this queue).
func isKeyRefusal(err error) bool {
	code := connect.CodeOf(err)
	return code == connect.CodeUnauthenticated || code == connect.CodePermissionDenied
}

// refuseKey stops the worker after the server refused its key (err), once.
func (w *Worker) refuseKey(err error) {
	w.refuseOnce.Do(func() {
		w.keyErr = keyRefusedError(err)
		close(w.keyRefused)
		w.log.Error("the server refuses this worker's key: stopping its jobs and itself; output not yet sent stays in the spool directory",
			"dir", w.cfg.SpoolDir, "error", w.keyErr)
		w.stopAll("the server refused the worker's key", true)
		w.stopSends()
	})
}

// keyError is the error of a refused key, or nil.
func (w *Worker) keyError() error {
	select {
	case <-w.keyRefused:
		return w.keyErr
	default:
		return nil
	}
}

// keyRefusedError is the error for a server that refuses the worker's key.
func keyRefusedError(err error) error {
	kind := spool.ErrUnauthenticated
	if connect.CodeOf(err) == connect.CodePermissionDenied {
		kind = spool.ErrPermissionDenied
	}
	why := err.Error()
	var ce *connect.Error
	if errors.As(err, &ce) {
		why = ce.Message()
	}
	if kind == spool.ErrPermissionDenied {
		// The server knows the key: its answer says what the key lacks (a
		// worker's role, or the queue asked for) and what to do.
		return fmt.Errorf("worker: the server refuses this worker's key (%w): %s", kind, why)
	}
	return fmt.Errorf("worker: the server refuses this worker's key (%w): %s; give the worker a worker key (spool keys create --role worker --name NAME) in SPOOL_API_KEY", kind, why)
}
