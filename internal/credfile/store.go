package credfile

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"strings"
)

// File is what the credentials file holds: one key per server, by the
// server's address as Server gives it.
type File struct {
	Servers map[string]Entry `json:"servers"`
}

// Entry is the key stored for one server, with who it is to that server
// (as the server said at login), for the person reading the file.
type Entry struct {
	Key  string `json:"key"`
	Name string `json:"name,omitempty"`
	Role string `json:"role,omitempty"`
}

// maxFileBytes bounds what Read decodes: a file of a few keys is a few
// KiB, so anything near this is not one spool wrote.
const maxFileBytes = 1 << 20

// Server is the name a server's key is stored under: its address with the
// scheme and host in lower case and no trailing slash, so that
// HTTP://127.0.0.1:7070/ and http://127.0.0.1:7070 find the same key.
func Server(address string) string {
	u, err := url.Parse(strings.TrimSpace(address))
	if err != nil || u.Host == "" {
		return strings.TrimRight(strings.TrimSpace(address), "/")
	}
	return strings.ToLower(u.Scheme) + "://" + strings.ToLower(u.Host) + strings.TrimRight(u.Path, "/")
}

// Read reads the credentials file at path. A file that does not exist is
// an empty one.
func Read(path string) (File, error) {
	f := File{Servers: map[string]Entry{}}
	r, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return f, nil
	}
	if err != nil {
		return f, err
	}
	defer r.Close()
	dec := json.NewDecoder(io.LimitReader(r, maxFileBytes))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&f); err != nil {
		return File{Servers: map[string]Entry{}}, fmt.Errorf("%s is not a spool credentials file (%v): remove it and log in again with `spool login`", path, err)
	}
	if f.Servers == nil {
		f.Servers = map[string]Entry{}
	}
	return f, nil
}

// Write replaces the credentials file at path with f, in one step: the
// file appears whole or not at all, readable and writable by its owner
// only (0600), in a directory only its owner may enter (0700).
func Write(path string, f File) error {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	// A directory that existed before keeps its mode from MkdirAll; the
	// keys must not be listed, let alone read, by others.
	if err := os.Chmod(dir, 0o700); err != nil {
		return err
	}
	b, err := json.MarshalIndent(f, "", "  ")
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(dir, ".credentials-*") // created 0600
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(append(b, '\n')); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}
