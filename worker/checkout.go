package worker

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
)

// prepareDir returns the directory the command runs in and what to do once
// it has finished. Every attempt has a directory of its own (makeJobDir).
// With a repository, the command runs in a fresh checkout (removed
// afterwards); with the worker's WorkDir, there; otherwise in its own
// directory. A relative working_dir is taken inside whichever of these it
// runs in, an absolute one as it is.
func (a *attempt) prepareDir(ctx context.Context) (string, func(), error) {
	own, cleanupOwn, err := a.makeJobDir()
	if err != nil {
		return "", cleanupOwn, fmt.Errorf("could not make the job's directory: %w", err)
	}
	p := a.job.GetParams()
	wd := p.GetWorkingDir()
	switch {
	case p.GetRepositoryUrl() != "":
	case filepath.IsAbs(wd):
		return wd, cleanupOwn, nil
	case a.w.cfg.WorkDir != "":
		return filepath.Join(a.w.cfg.WorkDir, wd), cleanupOwn, nil
	case wd == "":
		return own, cleanupOwn, nil
	default:
		dir := filepath.Join(own, wd)
		if _, err := os.Stat(dir); errors.Is(err, os.ErrNotExist) {
			return "", cleanupOwn, fmt.Errorf("the working directory %q is taken inside the job's own directory on worker %s, which starts empty: give an absolute path, or run the worker with a working directory for jobs (spool worker --workdir DIR)", wd, a.w.cfg.ID)
		}
		return dir, cleanupOwn, nil
	}
	tmp, err := os.MkdirTemp(a.w.cfg.CheckoutDir, "job-*")
	if err != nil {
		return "", cleanupOwn, fmt.Errorf("checkout failed: %w", err)
	}
	cleanup := func() {
		_ = os.RemoveAll(tmp)
		cleanupOwn()
	}
	if err := a.w.user.own(tmp); err != nil {
		return "", cleanup, fmt.Errorf("checkout failed: %w", err)
	}
	if err := a.checkout(ctx, p.GetRepositoryUrl(), p.GetRef(), tmp); err != nil {
		return "", cleanup, fmt.Errorf("checkout failed: %w", err)
	}
	if filepath.IsAbs(wd) {
		return wd, cleanup, nil
	}
	return filepath.Join(tmp, wd), cleanup, nil
}

// checkout clones url at ref into dir. Branches and tags are fetched
// shallow; anything else (a commit) falls back to a full clone. git's own
// messages go into the job's log; the error names the repository and the
// ref, which git's last words may not. git runs as the job's user, with
// the job's environment, as the command will.
func (a *attempt) checkout(ctx context.Context, url, ref, dir string) error {
	if ref == "" {
		if err := a.git(ctx, "", "clone", "--quiet", "--depth", "1", "--", url, dir); err != nil {
			return fmt.Errorf("could not clone repository %s: %w", url, err)
		}
		return nil
	}
	quiet := exec.CommandContext(ctx, "git", "clone", "--quiet", "--depth", "1", "--branch", ref, "--", url, dir)
	quiet.Env = a.gitEnv()
	quiet.SysProcAttr = &syscall.SysProcAttr{Credential: a.w.user.credential()}
	if quiet.Run() == nil {
		return nil
	}
	// The directory stays (it is the job's user's); what the shallow clone
	// left in it goes.
	if err := emptyDir(dir); err != nil {
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
	p, err := startProcess(append([]string{"git"}, args...), dir, a.gitEnv(), "", false, a.w.user.credential())
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
// git runs with the worker's environment (where credentials for private
// repositories may be), except as another user (RunAs): that user's
// processes could read it, so git gets the job's environment, and the
// user's own configuration (HOME) holds what it needs.
func (a *attempt) gitEnv() []string {
	env := os.Environ()
	if a.w.user != nil {
		env = a.env()
	}
	return append(env, "GIT_TERMINAL_PROMPT=0", "GIT_ASKPASS=true")
}

// emptyDir removes what dir holds, leaving dir.
func emptyDir(dir string) error {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	for _, e := range entries {
		if err := os.RemoveAll(filepath.Join(dir, e.Name())); err != nil {
			return err
		}
	}
	return nil
}

func isClosedPipe(err error) bool { return errors.Is(err, os.ErrClosed) }
