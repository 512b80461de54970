// Package credfile knows where the command line keeps the API keys it was
// given with `spool login`: one file per user, in the user's configuration
// directory, readable by that user only. The worker looks for it too, to
// warn when the jobs it runs could read it.
package credfile

import (
	"os"
	"path/filepath"
)

// Path is the credentials file of the user running this process:
// $XDG_CONFIG_HOME/spool/credentials.json, or its equivalent on the
// platform (os.UserConfigDir).
func Path() (string, error) {
	dir, err := os.UserConfigDir()
	if err != nil {
		return "", err
	}
	return filepath.Join(dir, "spool", "credentials.json"), nil
}
