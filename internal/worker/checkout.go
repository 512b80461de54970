package worker

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// prepareDir returns the directory the command runs in and what to do once
// it has finished. With a repository, that is a fresh checkout (removed
// afterwards); without, the job's working_dir, resolved against the
// worker's own.
func (a *attempt) prepareDir(ctx context.Context) (string, func(), error) {
	p := a.job.GetParams()
	if p.GetRepositoryUrl() == "" {
		return resolve(a.w.cfg.WorkDir, p.GetWorkingDir()), func() {}, nil
	}
	tmp, err := os.MkdirTemp(a.w.cfg.CheckoutDir, "job-*")
	if err != nil {
		return "", func() {}, err
	}
	cleanup := func() { _ = os.RemoveAll(tmp) }
	if err := a.checkout(ctx, p.GetRepositoryUrl(), p.GetRef(), tmp); err != nil {
		return "", cleanup, err
	}
	return resolve(tmp, p.GetWorkingDir()), cleanup, nil
}

// resolve joins a relative dir onto base.
func resolve(base, dir string) string {
	if dir == "" || filepath.IsAbs(dir) || base == "" {
		return cmp.Or(dir, base)
	}
	return filepath.Join(base, dir)
}

// checkout clones url at ref into dir. Branches and tags are fetched
// shallow; anything else (a commit) falls back to a full clone. git's own
// messages go into the job's log, so a failed checkout explains itself.
func (a *attempt) checkout(ctx context.Context, url, ref, dir string) error {
	if ref == "" {
		return a.git(ctx, "clone", "--quiet", "--depth", "1", "--", url, dir)
	}
	quiet := exec.CommandContext(ctx, "git", "clone", "--quiet", "--depth", "1", "--branch", ref, "--", url, dir)
	quiet.Env = gitEnv()
	if quiet.Run() == nil {
		return nil
	}
	if err := os.RemoveAll(dir); err != nil {
		return err
	}
	if err := a.git(ctx, "clone", "--quiet", "--no-checkout", "--", url, dir); err != nil {
		return err
	}
	return a.git(ctx, "-C", dir, "checkout", "--quiet", "--detach", ref)
}

// git runs git with its output captured into the job's log.
func (a *attempt) git(ctx context.Context, args ...string) error {
	p, err := startProcess(append([]string{"git"}, args...), "", gitEnv())
	if err != nil {
		return fmt.Errorf("run git: %w (is git installed on the worker?)", err)
	}
	stop := context.AfterFunc(ctx, p.kill)
	defer stop()
	a.captureUntilExit(p)
	if code, sig := p.exit(); code != 0 {
		return fmt.Errorf("git %s failed (exit status %d%s)", strings.Join(args[:min(len(args), 2)], " "), code, withSignal(sig))
	}
	return nil
}

func withSignal(sig string) string {
	if sig == "" {
		return ""
	}
	return ", " + sig
}

// gitEnv never lets git wait for a password on a terminal no one watches.
func gitEnv() []string {
	return append(os.Environ(), "GIT_TERMINAL_PROMPT=0", "GIT_ASKPASS=true")
}

func isClosedPipe(err error) bool { return errors.Is(err, os.ErrClosed) }
