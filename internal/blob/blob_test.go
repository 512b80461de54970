package blob_test

import (
	"errors"
	"path"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/spool-run/spool/internal/blob"
)

func TestCheckKey(t *testing.T) {
	for _, k := range []string{"a", "job-1/out.tar", "a/b/c", "..x", "x..", ".hidden", "a b/ü"} {
		if err := blob.CheckKey(k); err != nil {
			t.Errorf("CheckKey(%q) = %v, want nil", k, err)
		}
	}
	for _, k := range []string{"", "/a", "a/", "a//b", ".", "..", "a/../b", "a/./b", "a\\b", "a\tb", "\x7f", "\xc3"} {
		err := blob.CheckKey(k)
		if !errors.Is(err, blob.ErrInvalidKey) {
			t.Errorf("CheckKey(%q) = %v, want ErrInvalidKey", k, err)
		}
	}
	if err := blob.CheckKey(strings.Repeat("a/", 300) + "b"); !errors.Is(err, blob.ErrInvalidKey) || !strings.Contains(err.Error(), "512") {
		t.Errorf("a 601-byte key: %v, want the limit named", err)
	}
}

func TestCheckPrefix(t *testing.T) {
	for _, p := range []string{"", "a", "a/", "job-1/ar"} {
		if err := blob.CheckPrefix(p); err != nil {
			t.Errorf("CheckPrefix(%q) = %v", p, err)
		}
	}
	for _, p := range []string{"/", "a//", "../", "a/../"} {
		if err := blob.CheckPrefix(p); !errors.Is(err, blob.ErrInvalidKey) {
			t.Errorf("CheckPrefix(%q) = %v, want ErrInvalidKey", p, err)
		}
	}
	if err := blob.CheckDeletePrefix(""); !errors.Is(err, blob.ErrInvalidKey) {
		t.Errorf(`CheckDeletePrefix("") = %v, want ErrInvalidKey`, err)
	}
}

func TestClip(t *testing.T) {
	for _, c := range []struct{ size, off, n, start, count int64 }{
		{10, 0, -1, 0, 10},
		{10, 2, 3, 2, 3},
		{10, 8, 5, 8, 2},
		{10, 10, 5, 10, 0},
		{10, 50, -1, 10, 0},
		{0, 0, -1, 0, 0},
	} {
		start, count, err := blob.Clip(c.size, c.off, c.n)
		if err != nil || start != c.start || count != c.count {
			t.Errorf("Clip(%d, %d, %d) = %d, %d, %v; want %d, %d", c.size, c.off, c.n, start, count, err, c.start, c.count)
		}
	}
	if _, _, err := blob.Clip(10, -1, 1); !errors.Is(err, blob.ErrInvalidRange) {
		t.Errorf("Clip at -1: %v, want ErrInvalidRange", err)
	}
}

// FuzzCheckKey: a key CheckKey accepts is a clean relative path of UTF-8
// that no path step can take out of a directory.
func FuzzCheckKey(f *testing.F) {
	for _, k := range []string{"a/b", "../x", "a/./b", "/x", "a\\..\\b", "x/..", "ü/…"} {
		f.Add(k)
	}
	f.Fuzz(func(t *testing.T, k string) {
		if blob.CheckKey(k) != nil {
			return
		}
		if path.Clean(k) != k || path.IsAbs(k) || !strings.HasPrefix(path.Clean("/root/"+k), "/root/") {
			t.Fatalf("CheckKey accepted %q, which is not a clean path inside a directory", k)
		}
		if !utf8.ValidString(k) || len(k) > blob.MaxKeyBytes || strings.ContainsAny(k, "\\\x00\n") {
			t.Fatalf("CheckKey accepted %q", k)
		}
	})
}
