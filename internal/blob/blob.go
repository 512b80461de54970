// Package blob is the seam for files kept beside jobs (artifacts, large
// inputs, scatter items): a Store puts, reads (whole or a range), lists,
// and deletes blobs by key. Each backend is a package of its own (dirblob
// on a local disk, pgblob in PostgreSQL, s3blob in S3), and every one passes
// the suite in blobtest.
//
// Every backend streams: a blob is never held whole in memory, however
// large, and a Put that fails midway leaves nothing behind that List, Get or
// Stat would show.
package blob

import (
	"context"
	"errors"
	"fmt"
	"io"
	"iter"
	"strings"
	"time"
	"unicode/utf8"
)

// Store holds blobs by key. Its methods are safe for concurrent use.
type Store interface {
	// Put stores what r yields under key, replacing any blob there, and
	// returns what was stored. The blob becomes visible only once r is
	// read to its end without error: before that, and after a failure, the
	// key shows what it showed before.
	Put(ctx context.Context, key string, r io.Reader) (Info, error)
	// Get reads length bytes of the blob from offset (length < 0: to the
	// end). A range reaching past the end is cut at the end; an offset at
	// or past the end reads nothing. Close the reader when done.
	Get(ctx context.Context, key string, offset, length int64) (io.ReadCloser, Info, error)
	// Stat describes the blob without reading it.
	Stat(ctx context.Context, key string) (Info, error)
	// List yields the blobs whose keys start with prefix ("" for all), in
	// the byte order of their keys. It stops at the first error, which it
	// yields with a zero Info.
	List(ctx context.Context, prefix string) iter.Seq2[Info, error]
	// Delete removes the blob; deleting a key that holds none is not an
	// error.
	Delete(ctx context.Context, key string) error
	// DeletePrefix removes every blob whose key starts with prefix, which
	// must not be empty (a job's blobs go with the job; all blobs never go
	// by accident). It returns how many it removed.
	DeletePrefix(ctx context.Context, prefix string) (int, error)
	// Close releases the store's resources.
	Close() error
}

// Info describes a stored blob.
type Info struct {
	Key  string
	Size int64
	// SHA256 is the hex SHA-256 of the blob's bytes, computed as they were
	// stored.
	SHA256 string
	// Modified is when the blob was stored.
	Modified time.Time
}

// Errors callers branch on, tested with errors.Is.
var (
	// ErrNotFound: no blob has the key.
	ErrNotFound = errors.New("blob not found")
	// ErrInvalidKey: the key cannot name a blob.
	ErrInvalidKey = errors.New("invalid blob key")
	// ErrInvalidRange: a negative offset.
	ErrInvalidRange = errors.New("invalid blob range")
)

// MaxKeyBytes bounds a key's length: S3's own limit is 1024 bytes, and a
// directory backend's path must stay well within the file system's.
const MaxKeyBytes = 512

// MaxSegmentBytes bounds each "/"-separated part of a key: the directory
// backend makes each a file or directory name, and file systems take 255
// bytes at most.
const MaxSegmentBytes = 200

// NotFound is ErrNotFound naming the key.
func NotFound(key string) error {
	return fmt.Errorf("%w: %q", ErrNotFound, key)
}

// CheckKey refuses a key that could escape a directory or mean something
// else to a backend: it must be valid UTF-8 of 1 to MaxKeyBytes bytes,
// made of "/"-separated segments none of which is empty, "." or ".." or
// longer than MaxSegmentBytes, and hold no control characters or
// backslashes.
func CheckKey(key string) error {
	return checkName(key, "key", false)
}

// CheckPrefix checks a prefix for List and DeletePrefix: like a key,
// except that it may be empty and may end with "/".
func CheckPrefix(prefix string) error {
	if prefix == "" {
		return nil
	}
	return checkName(prefix, "prefix", true)
}

// CheckDeletePrefix checks a prefix for DeletePrefix: like CheckPrefix,
// except that it may not be empty.
func CheckDeletePrefix(prefix string) error {
	if prefix == "" {
		return fmt.Errorf("%w: deleting by prefix needs a prefix; every blob never goes at once", ErrInvalidKey)
	}
	return CheckPrefix(prefix)
}

func checkName(s, what string, prefix bool) error {
	bad := func(why string) error {
		return fmt.Errorf("%w: %s %q %s", ErrInvalidKey, what, truncate(s), why)
	}
	switch {
	case s == "":
		return bad("is empty")
	case len(s) > MaxKeyBytes:
		return bad(fmt.Sprintf("is longer than %d bytes", MaxKeyBytes))
	case !utf8.ValidString(s):
		return bad("is not valid UTF-8")
	case strings.HasPrefix(s, "/"):
		return bad("starts with /")
	}
	for _, r := range s {
		if r < 0x20 || r == 0x7f || r == '\\' {
			return bad("holds a control character or a backslash")
		}
	}
	segs := strings.Split(s, "/")
	if prefix && len(segs) > 1 && segs[len(segs)-1] == "" {
		segs = segs[:len(segs)-1]
	}
	for _, seg := range segs {
		switch seg {
		case "":
			return bad("has an empty segment (//, or a / at the end)")
		case ".", "..":
			return bad("has a . or .. segment")
		}
		if len(seg) > MaxSegmentBytes {
			return bad(fmt.Sprintf("has a part longer than %d bytes between slashes", MaxSegmentBytes))
		}
	}
	return nil
}

func truncate(s string) string {
	if len(s) <= 80 {
		return s
	}
	return s[:80] + "…"
}
