package credfile

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestServer: the spellings of one address store one key.
func TestServer(t *testing.T) {
	for in, want := range map[string]string{
		"http://127.0.0.1:7070":         "http://127.0.0.1:7070",
		"HTTP://127.0.0.1:7070/":        "http://127.0.0.1:7070",
		" https://Spool.Example.com/ ":  "https://spool.example.com",
		"http://[::1]:7070":             "http://[::1]:7070",
		"https://spool.example.com:443": "https://spool.example.com:443",
	} {
		if got := Server(in); got != want {
			t.Errorf("Server(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestReadWrite: a missing file is empty; what is written reads back; the
// file is the owner's only, also when it was not before; a file that is
// not one spool wrote is refused with what to do.
func TestReadWrite(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "spool")
	path := filepath.Join(dir, "credentials.json")
	f, err := Read(path)
	if err != nil || len(f.Servers) != 0 {
		t.Fatalf("a missing file: %+v %v", f, err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(`{"servers": {}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	f.Servers["http://127.0.0.1:7070"] = Entry{Key: "spool_x", Name: "admin", Role: "admin"}
	if err := Write(path, f); err != nil {
		t.Fatal(err)
	}
	for p, want := range map[string]os.FileMode{path: 0o600, dir: 0o700} {
		if info, err := os.Stat(p); err != nil || info.Mode().Perm() != want {
			t.Errorf("%s: %v, want mode %v (%v)", p, info.Mode().Perm(), want, err)
		}
	}
	if got, err := Read(path); err != nil || got.Servers["http://127.0.0.1:7070"].Key != "spool_x" {
		t.Fatalf("read back %+v %v", got, err)
	}
	if left, _ := filepath.Glob(filepath.Join(dir, ".credentials-*")); len(left) > 0 {
		t.Errorf("temporary files left behind: %v", left)
	}
	if err := os.WriteFile(path, []byte("spool_not-json"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Read(path); err == nil || !strings.Contains(err.Error(), "not a spool credentials file") || !strings.Contains(err.Error(), "spool login") {
		t.Fatalf("a file spool did not write: %v", err)
	}
}

// FuzzRead: any file is read or refused, never a panic, and what is read
// is written and read back the same.
func FuzzRead(f *testing.F) {
	f.Add([]byte(`{"servers": {"http://127.0.0.1:7070": {"key": "spool_x", "name": "admin", "role": "admin"}}}`))
	f.Add([]byte(`{"servers": null}`))
	f.Add([]byte(`{}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		path := filepath.Join(t.TempDir(), "credentials.json")
		if err := os.WriteFile(path, b, 0o600); err != nil {
			t.Fatal(err)
		}
		got, err := Read(path)
		if err != nil {
			return
		}
		if err := Write(path, got); err != nil {
			t.Fatal(err)
		}
		again, err := Read(path)
		if err != nil || len(again.Servers) != len(got.Servers) {
			t.Fatalf("read back %+v %v, wrote %+v", again, err, got)
		}
		for k, v := range got.Servers {
			if again.Servers[k] != v {
				t.Fatalf("entry %q read back as %+v, wrote %+v", k, again.Servers[k], v)
			}
		}
	})
}
