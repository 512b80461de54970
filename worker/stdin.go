package worker

import (
	"os"
)

// stdinFile names the file the command reads on stdin ("": none, so
// /dev/null). A scatter's job reads its input document; any other job its
// stdin bytes, kept in a file of their own, removed when the attempt ends.
// A file rather than a pipe: the command reads it at its own pace, or not
// at all, and nothing in the worker waits on it.
func (a *attempt) stdinFile(files *scatterFiles) (string, func(), error) {
	if files != nil {
		return files.input, func() {}, nil
	}
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
