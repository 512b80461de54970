package worker

import (
	"os"

	"golang.org/x/sys/unix"
)

// renameNoReplace renames from to to, failing if to exists.
func renameNoReplace(from, to string) error {
	return unix.Renameat2(unix.AT_FDCWD, from, unix.AT_FDCWD, to, unix.RENAME_NOREPLACE)
}

// listxattr returns the size of the names of f's extended attributes.
func listxattr(f *os.File) (int, error) {
	return unix.Flistxattr(int(f.Fd()), nil)
}
