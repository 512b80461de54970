package worker

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"

	"github.com/bmatcuk/doublestar/v4"

	"github.com/spool-run/spool"
	spoolv1 "github.com/spool-run/spool/gen/spool/v1"
	"github.com/spool-run/spool/internal/artifact"
	"github.com/spool-run/spool/internal/events"
	"github.com/spool-run/spool/internal/termview"
)

// A job's artifacts are the files its globs (params.artifacts) match in
// the directory its command ran in, collected once the command ends,
// whatever its exit code, and uploaded before the job is completed, each
// streamed from its file. The job's process is given what it needs to
// upload more itself (spool artifact upload): the server's address, the
// job token of its lease, and the CA the worker trusts.
//
// Files are opened through an os.Root of the command's directory: a
// symbolic link the job left pointing out of it (at the worker's own key,
// say, when jobs run as another user) is not followed out, and a glob's
// ** does not walk into linked directories.

// artifactEnv is what the job's process needs to keep artifacts itself.
func (a *attempt) artifactEnv() []string {
	tok := a.lease.GetJobToken()
	if tok == "" {
		return nil // a server that predates job tokens
	}
	env := []string{"SPOOL_SERVER=" + a.w.cfg.Server, "SPOOL_JOB_TOKEN=" + tok}
	if a.w.cfg.CAFile != "" {
		env = append(env, "SPOOL_CA="+a.w.cfg.CAFile)
	}
	return env
}

// collectArtifacts uploads the files the job's globs match under dir, and
// says in the job's output (stderr) what it kept and what failed. A
// failure changes nothing of how the job ended.
func (a *attempt) collectArtifacts(ctx context.Context, dir string) {
	globs := a.job.GetParams().GetArtifacts()
	if len(globs) == 0 {
		return
	}
	if a.lease.GetJobToken() == "" {
		a.say("artifacts: not kept: the server gave this job no job token (it predates artifacts)")
		return
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		a.say("artifacts: not kept: cannot open the job's directory: " + err.Error())
		return
	}
	defer root.Close()
	var paths []string
	for _, g := range globs {
		matches, err := doublestar.Glob(root.FS(), g, doublestar.WithFilesOnly(), doublestar.WithNoFollow())
		if err != nil {
			a.say(fmt.Sprintf("artifacts: %s: %v", g, err))
			continue
		}
		if len(matches) == 0 {
			a.say("artifacts: no file matches " + g)
		}
		paths = append(paths, matches...)
	}
	slices.Sort(paths)
	paths = slices.Compact(paths)
	remote := artifact.Remote{REST: a.w.rest.WithBearer(a.lease.GetJobToken())}
	var kept, bytes int64
	failed := 0
	for i, p := range paths {
		n, err := a.uploadFile(ctx, &remote, root, p)
		if err != nil {
			failed++
			a.say(fmt.Sprintf("artifacts: %s not kept: %v", p, err))
			if ctx.Err() != nil {
				return
			}
			if whole(err) && i+1 < len(paths) {
				// The server refuses the job, not the file: the
				// others would be refused alike.
				failed += len(paths) - i - 1
				a.say(fmt.Sprintf("artifacts: the other %d not tried", len(paths)-i-1))
				break
			}
			continue
		}
		kept++
		bytes += n
	}
	msg := fmt.Sprintf("uploaded %d artifact%s (%s)", kept, plural(kept), termview.Size(bytes))
	if failed > 0 {
		msg += fmt.Sprintf("; %d failed", failed)
	}
	a.say(msg)
}

// uploadFile streams the regular file p of root to the server, and
// returns its size.
func (a *attempt) uploadFile(ctx context.Context, remote *artifact.Remote, root *os.Root, p string) (int64, error) {
	f, err := root.Open(p)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return 0, err
	}
	if !fi.Mode().IsRegular() {
		return 0, errors.New("not a regular file")
	}
	art, err := remote.Upload(ctx, a.job.GetJobId(), p, f, fi.Size())
	if err != nil {
		return 0, err
	}
	return art.Size, nil
}

// whole reports whether an upload's refusal is of the job's every upload
// (no blob store, the attempt is over, the token refused) rather than of
// one file.
func whole(err error) bool {
	return errors.Is(err, spool.ErrUnavailable) || errors.Is(err, spool.ErrStaleLease) ||
		errors.Is(err, spool.ErrUnauthenticated) || errors.Is(err, spool.ErrPermissionDenied)
}

// say adds a line of the worker's own to the job's output, on stderr.
func (a *attempt) say(msg string) {
	a.onLines([]events.Line{{Data: []byte(msg), Stream: spoolv1.StreamType_STREAM_TYPE_STDERR, Time: a.w.clock.Now()}})
}

func plural(n int64) string {
	if n == 1 {
		return ""
	}
	return "s"
}
