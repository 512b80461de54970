package outbox

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
)

// Outboxes as workers before the one-file layout left them: a directory
// JOB-aATTEMPT holding header.json and the segments 00000001.seg and on
// (which start without a header record). A worker upgraded over such a
// spool directory still finds them, sends what they hold and removes them.

// isLegacy reports whether path is an outbox directory.
func isLegacy(path string) bool {
	_, err := os.Stat(filepath.Join(path, "header.json"))
	return err == nil
}

func (o *Outbox) readLegacyHeader() error {
	b, err := os.ReadFile(filepath.Join(o.path, "header.json"))
	if err != nil {
		return fmt.Errorf("outbox %s: %w", o.path, err)
	}
	if err := json.Unmarshal(b, &o.header); err != nil {
		return fmt.Errorf("outbox %s: header: %w", o.path, err)
	}
	return nil
}
