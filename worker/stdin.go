package worker

import (
	"os"
)

// writeStdin keeps the job's stdin bytes in a file of their own, removed
// when the attempt ends, and returns its name ("" when the job gave none).
// A file rather than a pipe: the command reads it at its own pace, or not
// at all, and nothing in the worker waits on it.
func (a *attempt) writeStdin() (string, func(), error) {
	data := a.job.GetParams().GetStdin()
	if len(data) == 0 {
		return "", func() {}, nil
	}
	f, err := os.CreateTemp(a.w.cfg.CheckoutDir, "stdin-*")
	if err != nil {
		return "", func() {}, err
	}
	cleanup := func() { _ = os.Remove(f.Name()) }
	if _, err := f.Write(data); err != nil {
		f.Close()
		return "", cleanup, err
	}
	return f.Name(), cleanup, f.Close()
}
