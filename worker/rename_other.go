//go:build !linux

package worker

import (
	"errors"
	"os"
)

// renameNoReplace: only Linux renames without replacing in one step; the
// job directories are then made and removed each time.
func renameNoReplace(string, string) error { return errors.ErrUnsupported }

// listxattr: elsewhere there are no spares to check.
func listxattr(*os.File) (int, error) { return 0, errors.ErrUnsupported }
