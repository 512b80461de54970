package setting_test

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spool-run/spool/internal/setting"
)

// TestMakePrivateDir: a missing directory is made with the mode asked
// for; one made otherwise is given it, and the old mode returned to be
// said; a directory every user writes to (like /tmp) is refused, not
// taken.
func TestMakePrivateDir(t *testing.T) {
	root := t.TempDir()
	fresh := filepath.Join(root, "a", "b")
	if was, err := setting.MakePrivateDir("server.data_dir", fresh, 0o700); err != nil || was != 0 {
		t.Fatalf("a new directory: was %#o, %v", was, err)
	}
	wantMode(t, fresh, 0o700)

	open := filepath.Join(root, "open")
	if err := os.Mkdir(open, 0o755); err != nil {
		t.Fatal(err)
	}
	_ = os.Chmod(open, 0o755)
	if was, err := setting.MakePrivateDir("server.data_dir", open, 0o700); err != nil || was != 0o755 {
		t.Fatalf("a directory of mode 0755: was %#o, %v; want 0755 said", was, err)
	}
	wantMode(t, open, 0o700)

	shared := filepath.Join(root, "tmp")
	if err := os.Mkdir(shared, 0o777); err != nil {
		t.Fatal(err)
	}
	_ = os.Chmod(shared, 0o777|fs.ModeSticky)
	_, err := setting.MakePrivateDir("--spool-dir", shared, 0o700)
	if !errors.Is(err, fs.ErrPermission) || !strings.Contains(err.Error(), "--spool-dir "+shared+" is shared by every user") {
		t.Fatalf("a directory like /tmp: %v", err)
	}
	fi, _ := os.Stat(shared)
	if fi.Mode().Perm() != 0o777 {
		t.Fatalf("the shared directory was changed to %#o", fi.Mode().Perm())
	}
}

func wantMode(t *testing.T, dir string, mode fs.FileMode) {
	t.Helper()
	fi, err := os.Stat(dir)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != mode {
		t.Fatalf("%s has mode %#o, want %#o", dir, fi.Mode().Perm(), mode)
	}
}
