// Package datadir names what a spool server keeps in its data directory:
// the first admin key, the key that signs task tokens, and the SQLite
// database with its journal files. Each is a secret (a key, or jobs'
// parameters and output), so the directory is its owner's alone (0700)
// and so is every file in it (0600). The worker looks for these names
// too, to tell whether the jobs it runs could read a server's secrets.
package datadir

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
)

const (
	// Default is the data directory of a server started with no setting.
	Default = "./spool-data"
	// EnvVar sets the data directory (the configuration's
	// server.data_dir).
	EnvVar = "SPOOL_SERVER_DATA_DIR"
	// AdminKey holds the admin key a server writes on its first start.
	AdminKey = "admin.key"
	// TokenKey holds the key that signs task tokens, sessions and tickets.
	TokenKey = "token.key"
	// Database is the SQLite store's file.
	Database = "spool.db"
	// Blobs is the directory of files kept beside jobs, on a server whose
	// blobs are in a directory (blobs.type dir) that names none.
	Blobs = "blobs"
)

// DirMode and FileMode are the modes of the data directory and of the
// files spool writes in it.
const (
	DirMode  fs.FileMode = 0o700
	FileMode fs.FileMode = 0o600
)

// Keys are the files that show a directory is a server's data directory.
var Keys = []string{AdminKey, TokenKey, Database}

// Journals are the files SQLite keeps beside a database (path+suffix)
// while it is open, or after a crash: they hold recent writes, secrets
// included.
var Journals = []string{"-wal", "-shm", "-journal"}

// Holds returns the first file of Keys found in dir ("" when none is):
// whether dir is a server's data directory.
func Holds(dir string) string {
	for _, name := range Keys {
		if _, err := os.Lstat(filepath.Join(dir, name)); err == nil {
			return filepath.Join(dir, name)
		}
	}
	return ""
}

// Restrict takes away from each file of paths that exists every
// permission beyond FileMode, and returns those it changed (to be said),
// each with the mode it had.
func Restrict(paths ...string) (narrowed map[string]fs.FileMode, err error) {
	var errs []error
	for _, p := range paths {
		fi, err := os.Lstat(p)
		if errors.Is(err, fs.ErrNotExist) || (err == nil && !fi.Mode().IsRegular()) {
			continue
		}
		if err == nil && fi.Mode().Perm()&^FileMode == 0 {
			continue
		}
		if err == nil {
			err = os.Chmod(p, FileMode)
		}
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if narrowed == nil {
			narrowed = map[string]fs.FileMode{}
		}
		narrowed[p] = fi.Mode().Perm()
	}
	return narrowed, errors.Join(errs...)
}
