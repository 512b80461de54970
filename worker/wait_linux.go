package worker

import (
	"errors"
	"syscall"

	"golang.org/x/sys/unix"
)

// awaitExit blocks until process pid has exited, leaving it unreaped
// (WNOWAIT): its pid cannot be reused until someone waits for it. It
// reports whether it could wait so.
func awaitExit(pid int) bool {
	var info unix.Siginfo
	for {
		err := unix.Waitid(unix.P_PID, pid, &info, unix.WEXITED|unix.WNOWAIT, nil)
		if !errors.Is(err, syscall.EINTR) {
			return err == nil
		}
	}
}
