package worker

import (
	"errors"
	"io"
	"os"
	"syscall"

	"github.com/creack/pty"
	"golang.org/x/sys/unix"
)

// A job that asks for a pseudo-terminal (JobParams.pty) runs with its
// stdout and stderr on the terminal's slave end, and its stdin too unless
// the job gives it input; the worker reads the master end as the job's one
// output stream.

// terminalSize is the window a job's terminal reports: wide enough that
// tools which fit their output to the terminal (tables, progress bars) do
// not wrap it early.
var terminalSize = pty.Winsize{Rows: 50, Cols: 200}

// endOfInput is the terminal's default VEOF character (^D).
const endOfInput = 0x04

// openTerminal opens a pseudo-terminal for one command. master is the
// worker's end; slave is for the command, and the worker closes its copy
// once the command has started. With eof, the terminal's input holds an
// end of input before the command starts.
func openTerminal(eof bool) (master, slave *os.File, err error) {
	m, s, err := pty.Open()
	if err != nil {
		return nil, nil, err
	}
	defer m.Close() // a copy of it is what the worker keeps
	fail := func(err error) (*os.File, *os.File, error) {
		s.Close()
		return nil, nil, err
	}
	if err := pty.Setsize(s, &terminalSize); err != nil {
		return fail(err)
	}
	if eof {
		// Nobody types into a job's terminal: a command that reads its
		// input gets end of input, as it would from /dev/null, rather
		// than waiting until its timeout. Written before the command
		// starts, it meets the terminal in its default line mode, where
		// ^D means exactly that (and is not echoed into the output).
		if _, err := m.Write([]byte{endOfInput}); err != nil {
			return fail(err)
		}
	}
	// pty.Open's ioctls went through Fd(), which leaves the file in
	// blocking mode, and a blocked Read on such a file cannot be ended by
	// Close. The worker must be able to stop reading while a process that
	// left the job's process group still holds the terminal, so it keeps a
	// non-blocking copy, which the runtime's poller watches and Close
	// interrupts. The copy is close-on-exec, like every file Go opens, so
	// no other command inherits it.
	fd, err := unix.FcntlInt(m.Fd(), unix.F_DUPFD_CLOEXEC, 0)
	if err != nil {
		return fail(err)
	}
	if err := unix.SetNonblock(fd, true); err != nil {
		unix.Close(fd)
		return fail(err)
	}
	return os.NewFile(uintptr(fd), m.Name()), s, nil
}

// terminalReader reads a terminal's master end. Once the last process
// holding the slave end has closed it, Linux answers reads with EIO
// instead of end of file: for the worker that is the end of the output.
type terminalReader struct{ f *os.File }

func (r terminalReader) Read(b []byte) (int, error) {
	n, err := r.f.Read(b)
	if errors.Is(err, syscall.EIO) {
		err = io.EOF
	}
	return n, err
}
