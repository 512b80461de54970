// Package dirblob keeps blobs as files under a directory (by default the
// server's data directory's blobs/), for a server on SQLite.
//
// A key's segments become directories and a file: "job-7/out.tar" is
// job-7.d/out.tar.b. The suffixes keep a key's file apart from another
// key's directory, so "a" and "a/b" can both be blobs. Each file starts
// with a fixed header holding the blob's SHA-256; its size is the file's
// less the header, and its modification time the file's.
//
// A Put writes into tmp/ and renames the finished file into place, so a
// blob is either whole or absent; what a crash leaves in tmp/ goes at a
// later Open.
package dirblob

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"iter"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/spool-run/spool/internal/blob"
)

const (
	fileSuffix = ".b"
	dirSuffix  = ".d"
	// tmpDir holds Puts in progress; its name has neither suffix, so it
	// never collides with a key's directory or file.
	tmpDir = "tmp"
	// magic starts every header; the header is magic, the hex SHA-256
	// and a newline.
	magic      = "spool-blob-1 "
	headerSize = len(magic) + 64 + 1
)

// Modes: blobs are jobs' files, their owner's alone like the rest of the
// data directory.
const (
	dirMode  fs.FileMode = 0o700
	fileMode fs.FileMode = 0o600
)

// Store is a directory of blobs.
type Store struct {
	root string
}

var _ blob.Store = (*Store)(nil)

// staleAfter is how old an unfinished Put's file must be before Open
// removes it: older than any Put still running, in case another process
// shares the directory.
const staleAfter = time.Hour

// Open opens (creating if needed) the blob directory root. Puts a crash
// left unfinished, more than an hour ago, are removed.
func Open(root string) (*Store, error) {
	tmp := filepath.Join(root, tmpDir)
	if err := os.MkdirAll(tmp, dirMode); err != nil {
		return nil, fmt.Errorf("creating the blob directory: %w", err)
	}
	entries, err := os.ReadDir(tmp)
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", tmp, err)
	}
	for _, e := range entries {
		if info, err := e.Info(); err == nil && time.Since(info.ModTime()) > staleAfter {
			if err := os.Remove(filepath.Join(tmp, e.Name())); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return nil, fmt.Errorf("clearing an unfinished blob: %w", err)
			}
		}
	}
	return &Store{root: root}, nil
}

// Close does nothing: the store holds no open files between calls.
func (s *Store) Close() error { return nil }

// path is the file of a checked key.
func (s *Store) path(key string) string {
	segs := strings.Split(key, "/")
	parts := make([]string, 0, len(segs)+1)
	parts = append(parts, s.root)
	for _, seg := range segs[:len(segs)-1] {
		parts = append(parts, seg+dirSuffix)
	}
	parts = append(parts, segs[len(segs)-1]+fileSuffix)
	return filepath.Join(parts...)
}

// Put implements blob.Store.
func (s *Store) Put(ctx context.Context, key string, r io.Reader) (blob.Info, error) {
	if err := blob.CheckKey(key); err != nil {
		return blob.Info{}, err
	}
	f, err := os.CreateTemp(filepath.Join(s.root, tmpDir), "put-*")
	if err != nil {
		return blob.Info{}, fmt.Errorf("storing blob %q: %w", key, err)
	}
	done := false
	defer func() {
		if !done {
			f.Close()
			os.Remove(f.Name())
		}
	}()
	// The header's place is kept, and filled once the checksum is known.
	if _, err := f.Seek(int64(headerSize), io.SeekStart); err != nil {
		return blob.Info{}, err
	}
	d := blob.NewDigest()
	if _, err := io.Copy(f, d.Reader(ctx, r)); err != nil {
		return blob.Info{}, fmt.Errorf("storing blob %q: %w", key, err)
	}
	sum := d.Sum()
	if _, err := f.WriteAt([]byte(magic+sum+"\n"), 0); err != nil {
		return blob.Info{}, fmt.Errorf("storing blob %q: %w", key, err)
	}
	// Synced before the rename, so a crash cannot leave a blob in place
	// whose bytes never reached the disk.
	if err := f.Sync(); err != nil {
		return blob.Info{}, fmt.Errorf("storing blob %q: %w", key, err)
	}
	st, err := f.Stat()
	if err != nil {
		return blob.Info{}, err
	}
	if err := f.Close(); err != nil {
		return blob.Info{}, fmt.Errorf("storing blob %q: %w", key, err)
	}
	if err := ctx.Err(); err != nil {
		return blob.Info{}, err
	}
	if err := s.place(f.Name(), s.path(key)); err != nil {
		return blob.Info{}, fmt.Errorf("storing blob %q: %w", key, err)
	}
	done = true
	return blob.Info{Key: key, Size: d.Size(), SHA256: sum, Modified: st.ModTime()}, nil
}

// place renames a finished file to dst, making its directories. A Delete
// of the last blob in a directory removes the directory (and its empty
// parents), and may do so while this Put makes the directories or between
// that and its rename: either then fails for want of a directory, and is
// tried again.
func (s *Store) place(tmp, dst string) error {
	var err error
	for range 10 {
		err = os.MkdirAll(filepath.Dir(dst), dirMode)
		if err == nil {
			err = os.Rename(tmp, dst)
		}
		if !errors.Is(err, fs.ErrNotExist) {
			return err
		}
	}
	return err
}

// open opens a blob's file and reads its header.
func (s *Store) open(key string) (*os.File, blob.Info, error) {
	if err := blob.CheckKey(key); err != nil {
		return nil, blob.Info{}, err
	}
	f, err := os.Open(s.path(key))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, blob.Info{}, blob.NotFound(key)
	}
	if err != nil {
		return nil, blob.Info{}, fmt.Errorf("reading blob %q: %w", key, err)
	}
	info, err := readInfo(f, key)
	if err != nil {
		f.Close()
		return nil, blob.Info{}, err
	}
	return f, info, nil
}

func readInfo(f *os.File, key string) (blob.Info, error) {
	st, err := f.Stat()
	if err != nil {
		return blob.Info{}, fmt.Errorf("reading blob %q: %w", key, err)
	}
	h := make([]byte, headerSize)
	if _, err := f.ReadAt(h, 0); err != nil || !bytes.HasPrefix(h, []byte(magic)) || h[headerSize-1] != '\n' {
		return blob.Info{}, fmt.Errorf("reading blob %q: %s is not a blob file spool wrote", key, f.Name())
	}
	return blob.Info{Key: key, Size: st.Size() - int64(headerSize), SHA256: string(h[len(magic) : headerSize-1]), Modified: st.ModTime()}, nil
}

// Get implements blob.Store.
func (s *Store) Get(ctx context.Context, key string, offset, length int64) (io.ReadCloser, blob.Info, error) {
	if err := ctx.Err(); err != nil {
		return nil, blob.Info{}, err
	}
	f, info, err := s.open(key)
	if err != nil {
		return nil, blob.Info{}, err
	}
	start, count, err := blob.Clip(info.Size, offset, length)
	if err != nil {
		f.Close()
		return nil, blob.Info{}, err
	}
	// The open file keeps the bytes it was opened on, whatever a later Put
	// or Delete does to the name.
	return rangeReader{Reader: io.NewSectionReader(f, int64(headerSize)+start, count), f: f}, info, nil
}

type rangeReader struct {
	io.Reader
	f *os.File
}

func (r rangeReader) Close() error { return r.f.Close() }

// Stat implements blob.Store.
func (s *Store) Stat(ctx context.Context, key string) (blob.Info, error) {
	if err := ctx.Err(); err != nil {
		return blob.Info{}, err
	}
	f, info, err := s.open(key)
	if err != nil {
		return blob.Info{}, err
	}
	f.Close()
	return info, nil
}

// List implements blob.Store. It walks the directory that holds every key
// with the prefix, and sorts what it found.
func (s *Store) List(ctx context.Context, prefix string) iter.Seq2[blob.Info, error] {
	return func(yield func(blob.Info, error) bool) {
		keys, err := s.keys(ctx, prefix)
		if err != nil {
			yield(blob.Info{}, err)
			return
		}
		for _, key := range keys {
			info, err := s.Stat(ctx, key)
			if errors.Is(err, blob.ErrNotFound) {
				continue // deleted since the walk
			}
			if !yield(info, err) || err != nil {
				return
			}
		}
	}
}

// keys are the keys starting with prefix, sorted.
func (s *Store) keys(ctx context.Context, prefix string) ([]string, error) {
	if err := blob.CheckPrefix(prefix); err != nil {
		return nil, err
	}
	// Whole segments of the prefix name directories to start from; what
	// follows the last "/" only filters.
	dirKey := ""
	if i := strings.LastIndex(prefix, "/"); i >= 0 {
		dirKey = prefix[:i+1]
	}
	dir := s.root
	for _, seg := range strings.Split(strings.TrimSuffix(dirKey, "/"), "/") {
		if seg != "" {
			dir = filepath.Join(dir, seg+dirSuffix)
		}
	}
	var keys []string
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if errors.Is(err, fs.ErrNotExist) {
			return nil // no such directory, or removed during the walk
		}
		if err != nil {
			return err
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		if path == dir {
			return nil
		}
		if d.IsDir() {
			if !strings.HasSuffix(d.Name(), dirSuffix) {
				return filepath.SkipDir // tmp/
			}
			return nil
		}
		if !strings.HasSuffix(d.Name(), fileSuffix) {
			return nil
		}
		key := s.keyOf(path)
		if strings.HasPrefix(key, prefix) {
			keys = append(keys, key)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("listing blobs under %q: %w", prefix, err)
	}
	slices.Sort(keys)
	return keys, nil
}

// keyOf is the key of a blob file under root.
func (s *Store) keyOf(path string) string {
	rel, _ := filepath.Rel(s.root, path)
	segs := strings.Split(filepath.ToSlash(rel), "/")
	for i, seg := range segs {
		if i == len(segs)-1 {
			segs[i] = strings.TrimSuffix(seg, fileSuffix)
		} else {
			segs[i] = strings.TrimSuffix(seg, dirSuffix)
		}
	}
	return strings.Join(segs, "/")
}

// Delete implements blob.Store.
func (s *Store) Delete(ctx context.Context, key string) error {
	if err := blob.CheckKey(key); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	path := s.path(key)
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("deleting blob %q: %w", key, err)
	}
	s.prune(filepath.Dir(path))
	return nil
}

// prune removes dir and its parents up to the root while they are empty,
// so deleted jobs leave no directories behind. A directory that is not
// empty (or that a Put has just filled) stays.
func (s *Store) prune(dir string) {
	for dir != s.root && strings.HasPrefix(dir, s.root) {
		if os.Remove(dir) != nil {
			return
		}
		dir = filepath.Dir(dir)
	}
}

// DeletePrefix implements blob.Store.
func (s *Store) DeletePrefix(ctx context.Context, prefix string) (int, error) {
	if err := blob.CheckDeletePrefix(prefix); err != nil {
		return 0, err
	}
	keys, err := s.keys(ctx, prefix)
	if err != nil {
		return 0, err
	}
	for i, key := range keys {
		if err := s.Delete(ctx, key); err != nil {
			return i, err
		}
	}
	return len(keys), nil
}
