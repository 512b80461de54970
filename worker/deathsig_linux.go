package worker

import "syscall"

// setDeathSignal has the kernel kill the command if the worker dies (even
// by kill -9), so a crashed worker leaves no job running unsupervised.
func setDeathSignal(a *syscall.SysProcAttr) { a.Pdeathsig = syscall.SIGKILL }
