package service

import (
	"strings"
	"testing"

	spoolv1 "github.com/spool-run/spool/gen/spool/v1"
	"github.com/spool-run/spool/internal/blob"
)

// FuzzStdinUpload: whatever a request names as its upload, what the core
// accepts is one blob directly under uploads/, never another key.
func FuzzStdinUpload(f *testing.F) {
	for _, s := range []string{"", "ABCDEFGHIJKLMNOPQRSTUVWXYZ", "ABCDEFGHIJKLMNOPQRSTUVWXY2", "../jobs/x/stdin", "A/B", "abcdefghijklmnopqrstuvwxyz", "ABCDEFGHIJKLMNOPQRSTUVWXYZ/", "ABCDEFGHIJKLMNOPQRSTUVWXYZ\n"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, id string) {
		err := checkStdinFields(&spoolv1.JobParams{StdinUpload: id})
		key := uploadKey(id)
		if (err == nil) != (id == "" || key != "") {
			t.Fatalf("upload %q: checked %v, key %q", id, err, key)
		}
		if key == "" {
			return
		}
		if blob.CheckKey(key) != nil || !strings.HasPrefix(key, uploadsPrefix) || strings.Count(key, "/") != 1 {
			t.Fatalf("upload %q is taken as key %q", id, key)
		}
	})
}
