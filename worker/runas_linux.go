package worker

import (
	"fmt"
	"os"
)

// canRunAs says why commands cannot be run as another user here, or nil.
func canRunAs() error {
	if uid := os.Geteuid(); uid != 0 {
		return fmt.Errorf("needs the worker to run as root (it runs as uid %d), to start commands as that user", uid)
	}
	return nil
}
