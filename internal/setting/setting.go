// Package setting words the errors of settings whose values are well formed
// but cannot be used on this machine: a directory that is a file, an address
// another program listens on, a configuration file that is not there. Each
// error names the setting and its value, so a program that knows how the
// person set it (a flag, an environment variable, a line of a file) can say
// it in those terms with Named.
package setting

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"
	"syscall"
)

// Error is a setting whose value cannot be used.
type Error struct {
	// Setting is the name the program knows it by (server.data_dir,
	// SpoolDir).
	Setting string
	// Value is the path or address it was given.
	Value string
	// problem says what is wrong, starting with the punctuation that
	// follows the value; "{setting}" in it stands for the setting's name.
	problem string
	// Err is the system's error, kept for errors.Is.
	Err error
}

func (e *Error) Error() string { return e.Named(e.Setting) }

func (e *Error) Unwrap() error { return e.Err }

// Named says what is wrong, calling the setting name: "--data-dir ./x is a
// file, not a directory".
func (e *Error) Named(name string) string {
	// The value is named even when the person never gave it (it is the
	// default), so they see which path or address was tried.
	return name + " " + e.Value + strings.ReplaceAll(e.problem, "{setting}", name)
}

// Rename rewrites err's message when it is (or wraps) an *Error, naming the
// setting as names says (a flag, say, for the settings a command has flags
// for); other errors are returned as they are.
func Rename(err error, names func(setting string) string) error {
	var se *Error
	if !errors.As(err, &se) {
		return err
	}
	return &renamed{msg: se.Named(names(se.Setting)), err: err}
}

type renamed struct {
	msg string
	err error
}

func (r *renamed) Error() string { return r.msg }
func (r *renamed) Unwrap() error { return r.err }

// MakeDir creates dir (and its parents) if it is missing and checks that
// files can be created in it. The error, if any, is an *Error naming
// setting: the directory is a file, a part of its path is, or it cannot be
// written.
func MakeDir(setting, dir string) error {
	err := os.MkdirAll(dir, 0o700)
	if err == nil {
		var probe *os.File
		if probe, err = os.CreateTemp(dir, ".spool-probe-*"); err == nil {
			probe.Close()
			return os.Remove(probe.Name())
		}
	}
	problem := ": cannot be used as a directory: " + reason(err)
	switch fi, statErr := os.Stat(dir); {
	case statErr == nil && !fi.IsDir():
		problem = " is a file, not a directory: choose another {setting}"
	case errors.Is(err, syscall.ENOTDIR):
		problem = ": a part of that path is a file, not a directory: choose another {setting}"
	case errors.Is(err, fs.ErrPermission):
		problem = ": permission denied: choose a directory you can write to, or change its permissions"
	case errors.Is(err, syscall.EROFS):
		problem = " is on a read-only file system: choose another {setting}"
	}
	return &Error{Setting: setting, Value: dir, problem: problem, Err: err}
}

// MakePrivateDir is MakeDir for a directory that holds what only spool may
// read (keys, the database, output not yet sent): it is created with mode
// perm, and one that exists with another mode is given perm. It returns
// the mode the directory had when it changed it (0 when it did not), so
// the caller can say so. A directory every user may write to (such as
// /tmp) is refused: taking it for spool would lock everyone else out.
func MakePrivateDir(setting, dir string, perm fs.FileMode) (was fs.FileMode, err error) {
	fi, err := os.Stat(dir)
	if errors.Is(err, fs.ErrNotExist) {
		// Made here, with perm (and so are missing parents: a directory
		// passed through must be as open as the one it leads to).
		if os.MkdirAll(dir, perm) == nil {
			_ = os.Chmod(dir, perm) // whatever the umask took away
		}
		// A failure is MakeDir's to word, below.
		fi, err = os.Stat(dir)
	}
	if err := MakeDir(setting, dir); err != nil {
		return 0, err
	}
	if err != nil {
		return 0, &Error{Setting: setting, Value: dir, problem: ": cannot be used as a directory: " + reason(err), Err: err}
	}
	mode := fi.Mode()
	if mode&fs.ModeSticky != 0 && mode.Perm()&0o002 != 0 {
		return 0, &Error{Setting: setting, Value: dir, problem: " is shared by every user of the machine: choose a directory of spool's own for {setting}", Err: fs.ErrPermission}
	}
	if mode.Perm() == perm {
		return 0, nil
	}
	if err := os.Chmod(dir, perm); err != nil {
		return 0, &Error{Setting: setting, Value: dir, problem: fmt.Sprintf(" has mode %#o and cannot be given %#o: %s; change its permissions", mode.Perm(), perm, reason(err)), Err: err}
	}
	return mode.Perm(), nil
}

// Listen words the error of listening on addr.
func Listen(setting, addr string, err error) error {
	problem := ": cannot listen there: " + reason(err)
	switch {
	case errors.Is(err, syscall.EADDRINUSE):
		problem = " is in use by another program: stop it or choose another {setting}"
	case errors.Is(err, syscall.EADDRNOTAVAIL):
		problem = " is not an address of this machine: choose one of its addresses for {setting} (127.0.0.1 for this machine only, 0.0.0.0 for all)"
	case errors.Is(err, fs.ErrPermission):
		problem = ": permission denied (ports below 1024 need privileges): choose another port in {setting}"
	}
	return &Error{Setting: setting, Value: addr, problem: problem, Err: err}
}

// File words the error of reading the file at path.
func File(setting, path string, err error) error {
	problem := ": cannot be read: " + reason(err)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		problem = ": no such file"
	case errors.Is(err, syscall.EISDIR):
		problem = " is a directory, not a file"
	case errors.Is(err, fs.ErrPermission):
		problem = ": permission denied"
	}
	return &Error{Setting: setting, Value: path, problem: problem, Err: err}
}

// Refused is a setting the server refuses, why being its answer.
func Refused(setting, value, why string, err error) error {
	return &Error{Setting: setting, Value: value, problem: " is refused by the server: " + why, Err: err}
}

// Unsafe is a setting whose value would give away what must stay private;
// why says what, and what to do instead.
func Unsafe(setting, value, why string, err error) error {
	return &Error{Setting: setting, Value: value, problem: " " + why, Err: err}
}

// reason is the system's words for err without the operation and path the
// message already gives ("no such device", not "open /x: no such device").
func reason(err error) string {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err.Error()
	}
	var se *os.SyscallError
	if errors.As(err, &se) {
		return se.Err.Error()
	}
	msg := err.Error()
	if i := strings.LastIndex(msg, ": "); i >= 0 {
		return msg[i+2:]
	}
	return msg
}
