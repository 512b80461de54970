package worker

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
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
// messages go into the job's log; the error names the repository and the
// ref, which git's last words may not.
func (a *attempt) checkout(ctx context.Context, url, ref, dir string) error {
	if ref == "" {
		if err := a.git(ctx, "", "clone", "--quiet", "--depth", "1", "--", url, dir); err != nil {
			return fmt.Errorf("could not clone repository %s: %w", url, err)
		}
		return nil
	}
	quiet := exec.CommandContext(ctx, "git", "clone", "--quiet", "--depth", "1", "--branch", ref, "--", url, dir)
	quiet.Env = gitEnv()
	if quiet.Run() == nil {
		return nil
	}
	if err := os.RemoveAll(dir); err != nil {
		return err
	}
	if err := a.git(ctx, "", "clone", "--quiet", "--no-checkout", "--", url, dir); err != nil {
		return fmt.Errorf("could not clone repository %s (for ref %q): %w", url, ref, err)
	}
	if err := a.git(ctx, dir, "checkout", "--quiet", "--detach", ref); err != nil {
		return fmt.Errorf("could not check out ref %q of repository %s (is it a branch, tag or commit there?): %w", ref, url, err)
	}
	return nil
}

// git runs git in dir ("": the worker's directory) with its output captured
// into the job's log.
func (a *attempt) git(ctx context.Context, dir string, args ...string) error {
	p, err := startProcess(append([]string{"git"}, args...), dir, gitEnv(), "", false)
	if err != nil {
		return fmt.Errorf("run git: %w (is git installed on the worker?)", err)
	}
	stop := context.AfterFunc(ctx, p.kill)
	defer stop()
	a.captureUntilExit(p)
	if code, sig := p.exit(); code != 0 {
		return fmt.Errorf("git %s exited with status %d%s; its messages are in the job's log", args[0], code, withSignal(sig))
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
