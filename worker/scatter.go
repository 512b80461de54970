package worker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"time"
	"unicode/utf8"

	"connectrpc.com/connect"

	spoolv1 "github.com/spool-run/spool/gen/spool/v1"
	"github.com/spool-run/spool/internal/backoff"
	"github.com/spool-run/spool/internal/scatterjob"
)

// A scatter's job (a batch or the gather) reads a JSON document on stdin,
// also kept in a file for commands that want to read it twice, and may
// leave a JSON result in a file spool names. Both live in a directory of
// their own, removed when the attempt ends.

// scatterFiles are a scatter job's input and result files.
type scatterFiles struct {
	input, result string
	// user is who the command runs as (nil: the worker's user); the
	// result is read only from a file that user made.
	user *jobUser
}

// prepareScatter fetches the job's input into a fresh directory. A job
// outside any scatter gets nil.
func (a *attempt) prepareScatter(ctx context.Context) (*scatterFiles, func(), error) {
	if a.job.GetParams().GetScatter() == nil {
		return nil, func() {}, nil
	}
	doc, err := a.fetchInput(ctx)
	if err != nil {
		return nil, func() {}, fmt.Errorf("could not fetch the job's input from the server: %w", err)
	}
	dir, err := os.MkdirTemp(a.w.cfg.CheckoutDir, "scatter-*")
	if err != nil {
		return nil, func() {}, err
	}
	cleanup := func() { _ = os.RemoveAll(dir) }
	f := &scatterFiles{input: filepath.Join(dir, "input.json"), result: filepath.Join(dir, "result.json"), user: a.w.user}
	if err := os.WriteFile(f.input, doc, 0o600); err != nil {
		return nil, cleanup, err
	}
	// The command, as its user, reads the input and writes its result
	// here.
	for _, p := range []string{dir, f.input} {
		if err := a.w.user.own(p); err != nil {
			return nil, cleanup, err
		}
	}
	return f, cleanup, nil
}

// fetchInput asks the server for the job's input. A server that is away
// (restarting, a connection reset mid-request) is asked again with backoff
// for as long as the attempt holds its lease: the heartbeat stops the
// attempt once the lease is lost, and only then does a missing input fail
// the job. A refusal (the lease is gone, the request is wrong) ends it at
// once.
func (a *attempt) fetchInput(ctx context.Context) ([]byte, error) {
	b := backoff.New(200*time.Millisecond, 2*time.Second)
	warned := false
	for {
		resp, err := a.w.rpc.GetJobInput(ctx, connect.NewRequest(&spoolv1.GetJobInputRequest{TaskToken: a.lease.GetTaskToken()}))
		if err == nil {
			if warned {
				a.log.Info("server reachable again; the job's input arrived")
			}
			return resp.Msg.GetInput(), nil
		}
		if isKeyRefusal(err) {
			a.w.refuseKey(err)
			return nil, err
		}
		switch connect.CodeOf(err) {
		case connect.CodeInvalidArgument, connect.CodeNotFound, connect.CodeFailedPrecondition:
			return nil, err
		}
		if why := a.stopReason(); why != "" {
			return nil, fmt.Errorf("%s (last error: %w)", why, err)
		}
		if !warned {
			a.log.Warn("cannot fetch the job's input; retrying", "error", err)
			warned = true
		}
		if werr := b.Wait(ctx); werr != nil {
			return nil, err
		}
	}
}

// env is what a scatter's job learns from its environment.
func (f *scatterFiles) env(m *spoolv1.ScatterMember) []string {
	if f == nil {
		return nil
	}
	env := []string{
		"SPOOL_SCATTER_ID=" + m.GetScatterId(),
		"SPOOL_BATCH_COUNT=" + strconv.Itoa(int(m.GetBatchCount())),
		"SPOOL_BATCH_FILE=" + f.input,
		"SPOOL_RESULT=" + f.result,
	}
	if !m.GetGather() {
		env = append(env, "SPOOL_BATCH_INDEX="+strconv.Itoa(int(m.GetBatchIndex())))
	}
	return env
}

// readResult returns what the command left in $SPOOL_RESULT: "" for
// nothing, an error that says what is wrong with anything that is not a
// JSON document of at most scatterjob.MaxResultBytes.
func (f *scatterFiles) readResult() (string, error) {
	if f == nil {
		return "", nil
	}
	fh, err := f.openResult()
	if errors.Is(err, os.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("could not read $SPOOL_RESULT: %w", err)
	}
	defer fh.Close()
	b, err := io.ReadAll(io.LimitReader(fh, scatterjob.MaxResultBytes+1))
	switch {
	case err != nil:
		return "", fmt.Errorf("could not read $SPOOL_RESULT: %w", err)
	case len(b) > scatterjob.MaxResultBytes:
		return "", fmt.Errorf("$SPOOL_RESULT holds more than %d bytes (256 KiB), the most a result may hold: write a smaller summary, or a reference to where the data is", scatterjob.MaxResultBytes)
	case len(b) == 0:
		return "", nil
	case !utf8.Valid(b) || !json.Valid(b):
		return "", errors.New("$SPOOL_RESULT is not valid JSON: write one JSON document (an object, an array, a string, …)")
	}
	return string(b), nil
}

// openResult opens the result file the command left. The worker may read
// more than the command (it is root, under RunAs), so what it reads must
// be a file the command could have read itself: a plain file, not a link
// to another (the worker's keys, say), nor a pipe that would keep the
// worker waiting, and, under RunAs, the user's.
func (f *scatterFiles) openResult() (*os.File, error) {
	fh, err := os.OpenFile(f.result, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if errors.Is(err, syscall.ELOOP) {
		return nil, errors.New("it is a symbolic link: write the result into the file itself")
	}
	if err != nil {
		return nil, err
	}
	fi, err := fh.Stat()
	switch {
	case err != nil:
	case !fi.Mode().IsRegular():
		err = errors.New("it is not a plain file")
	case f.user != nil && !f.user.made(fi):
		err = fmt.Errorf("it is not a file of user %s's own", f.user.name)
	}
	if err != nil {
		fh.Close()
		return nil, err
	}
	return fh, nil
}
