package worker

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	spoolv1 "github.com/spool-run/spool/gen/spool/v1"
)

// process is a running command with its output pipes. It runs in its own
// process group, so spool can signal everything it started, and it is
// killed if the worker dies (see setDeathSignal).
type process struct {
	cmd     *exec.Cmd
	stdout  *os.File // read ends; capture reads them to EOF
	stderr  *os.File // nil on a terminal: stdout is its master end
	started time.Time
	// terminal: the command runs on a pseudo-terminal, whose one stream
	// (stdout and stderr together) is read from stdout.
	terminal bool

	done  chan struct{} // closed when the process has exited
	state *os.ProcessState
	werr  error

	// mu orders signals against reaping: once the process is reaped its
	// pid, and so its process group's id, may belong to someone else, so
	// nothing is sent after exited is set, and it is set before reaping.
	mu       sync.Mutex
	exited   bool
	stopOnce sync.Once
}

// command returns argv (or /bin/sh -c script) and the text shown for it.
func command(p *spoolv1.JobParams) ([]string, string) {
	if p.GetScript() != "" {
		return []string{"/bin/sh", "-c", p.GetScript()}, p.GetScript()
	}
	return p.GetArgv(), strings.Join(p.GetArgv(), " ")
}

// startProcess starts argv in dir with env. Its stdin is the file named
// stdin, or /dev/null when that is "". With terminal, its stdout and
// stderr are a new pseudo-terminal, and so is its stdin when there is no
// file, holding only an end of input. With cred, it runs as that user
// (see Config.RunAs).
func startProcess(argv []string, dir string, env []string, stdin string, terminal bool, cred *syscall.Credential) (*process, error) {
	if len(argv) == 0 {
		return nil, errors.New("no command")
	}
	path, err := lookPath(argv[0], env)
	if err != nil {
		return nil, err
	}
	var in *os.File
	if stdin != "" {
		if in, err = os.Open(stdin); err != nil {
			return nil, err
		}
		// The child has its own copy once started.
		defer in.Close()
	}
	cmd := &exec.Cmd{Path: path, Args: argv, Dir: dir, Env: env}
	if in != nil {
		cmd.Stdin = in // set only when there is one: a nil *os.File would not read as "none"
	}
	p := &process{cmd: cmd, terminal: terminal, done: make(chan struct{})}
	// childEnds are the files the child gets a copy of; the worker's own
	// copies are closed once it has started, so that reading the other
	// ends sees the end once every process holding them is gone.
	var childEnds []*os.File
	if terminal {
		master, slave, err := openTerminal(in == nil)
		if err != nil {
			return nil, fmt.Errorf("could not open a pseudo-terminal: %w", err)
		}
		p.stdout, childEnds = master, []*os.File{slave}
		if cred != nil {
			// The terminal is the user's, as login makes it: programs
			// that check who owns their terminal find themselves.
			if err := slave.Chown(int(cred.Uid), -1); err != nil {
				master.Close()
				slave.Close()
				return nil, fmt.Errorf("could not give the pseudo-terminal to the job's user: %w", err)
			}
		}
		cmd.Stdout, cmd.Stderr = slave, slave
		if in == nil {
			cmd.Stdin = slave
		}
		// A session of its own with the terminal as its controlling
		// terminal (named by the child's fd 1, which is always the
		// terminal), as a shell in a terminal window has, so programs
		// that open /dev/tty find it. A new session is also a new
		// process group whose id is the command's pid: stopping the
		// job signals the group as for any other command.
		cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 1}
	} else {
		outR, outW, err := os.Pipe()
		if err != nil {
			return nil, err
		}
		errR, errW, err := os.Pipe()
		if err != nil {
			outR.Close()
			outW.Close()
			return nil, err
		}
		p.stdout, p.stderr, childEnds = outR, errR, []*os.File{outW, errW}
		cmd.Stdout, cmd.Stderr = outW, errW
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	}
	cmd.SysProcAttr.Credential = cred
	setDeathSignal(cmd.SysProcAttr)
	err = cmd.Start()
	for _, f := range childEnds {
		f.Close()
	}
	if err != nil {
		p.closeOutput()
		return nil, err
	}
	p.started = time.Now()
	go func() {
		// Wait for the exit without reaping: the process stays a zombie,
		// so its pid and group id stay its own while the group is killed.
		reaped := !awaitExit(cmd.Process.Pid)
		if reaped {
			p.werr = cmd.Wait() // no way to wait without reaping here
		} else {
			// Whatever the command left running in its group goes with
			// it: a job ends when its command does.
			p.signal(syscall.SIGKILL)
		}
		p.mu.Lock()
		p.exited = true
		p.mu.Unlock()
		if !reaped {
			p.werr = cmd.Wait()
		}
		p.state = cmd.ProcessState
		close(p.done)
	}()
	return p, nil
}

// closeOutput closes the worker's ends of the command's output, which
// ends any read of them.
func (p *process) closeOutput() {
	for _, f := range []*os.File{p.stdout, p.stderr} {
		if f != nil {
			f.Close()
		}
	}
}

// signal sends sig to the process's group, unless the process has been
// reaped (its group id may have been reused).
func (p *process) signal(sig syscall.Signal) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.exited {
		_ = killGroup(p.pid(), sig)
	}
}

// killGroup signals process group pgid (a variable so tests can watch what
// is sent).
var killGroup = func(pgid int, sig syscall.Signal) error { return syscall.Kill(-pgid, sig) }

// startError says why a command could not start. The child reports a
// working directory it cannot enter as the program's failure ("fork/exec
// /usr/bin/pwd: no such file or directory"), so the directory is looked at
// first: a job whose directory is not on the worker is told so.
func startError(text, dir, workerID string, err error) string {
	if dir != "" {
		switch fi, serr := os.Stat(dir); {
		case errors.Is(serr, fs.ErrNotExist):
			return fmt.Sprintf("the working directory %s does not exist on worker %s", dir, workerID)
		case serr == nil && !fi.IsDir():
			return fmt.Sprintf("the working directory %s is not a directory on worker %s", dir, workerID)
		}
	}
	return fmt.Sprintf("could not start %q: %v", text, err)
}

// lookPath finds a program the way the job's own PATH would.
func lookPath(prog string, env []string) (string, error) {
	if strings.Contains(prog, "/") {
		return prog, nil
	}
	for i := len(env) - 1; i >= 0; i-- {
		if v, ok := strings.CutPrefix(env[i], "PATH="); ok {
			for _, dir := range filepath.SplitList(v) {
				if dir == "" {
					dir = "."
				}
				full := filepath.Join(dir, prog)
				if fi, err := os.Stat(full); err == nil && !fi.IsDir() && fi.Mode()&0o111 != 0 {
					return full, nil
				}
			}
			return "", fmt.Errorf("%q not found in the job's PATH", prog)
		}
	}
	return exec.LookPath(prog)
}

// pid is the process id.
func (p *process) pid() int { return p.cmd.Process.Pid }

// hasExited reports whether the process has ended.
func (p *process) hasExited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// stop asks the process group to end (SIGTERM) and kills it (SIGKILL) if
// it is still there after grace. It returns at once; done closes when the
// process has exited.
func (p *process) stop(grace time.Duration) {
	p.stopOnce.Do(func() {
		p.signal(syscall.SIGTERM)
		go func() {
			t := time.NewTimer(grace)
			defer t.Stop()
			select {
			case <-p.done:
			case <-t.C:
				p.signal(syscall.SIGKILL)
			}
		}()
	})
}

// kill ends the process group now.
func (p *process) kill() { p.signal(syscall.SIGKILL) }

// exit describes how the process ended: its exit code (-1 when killed by a
// signal) and the signal's name, if any.
func (p *process) exit() (code int32, signal string) {
	if p.state == nil {
		return -1, ""
	}
	if ws, ok := p.state.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return -1, ws.Signal().String()
	}
	return int32(p.state.ExitCode()), ""
}
