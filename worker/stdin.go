package worker

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"net/http"
	"net/url"
	"os"
	"time"

	"github.com/spool-run/spool"
	"github.com/spool-run/spool/internal/backoff"
	"github.com/spool-run/spool/internal/wire"
)

// stdinFile names the file the command reads on stdin ("": none, so
// /dev/null). A scatter's job reads its input document; any other job its
// stdin bytes, kept in a file of their own, removed when the attempt ends.
// A file rather than a pipe: the command reads it at its own pace, or not
// at all, and nothing in the worker waits on it. A stdin too large for the
// job record is streamed from the server into that file, never held whole.
func (a *attempt) stdinFile(ctx context.Context, files *scatterFiles) (string, func(), error) {
	if files != nil {
		return files.input, func() {}, nil
	}
	p := a.job.GetParams()
	data := p.GetStdin()
	if len(data) == 0 && p.GetStdinSize() == 0 {
		return "", func() {}, nil
	}
	f, err := os.CreateTemp(a.w.cfg.CheckoutDir, "stdin-*")
	if err != nil {
		return "", func() {}, err
	}
	cleanup := func() { _ = os.Remove(f.Name()) }
	if p.GetStdinSize() > 0 {
		err = a.fetchStdin(ctx, f)
	} else {
		_, err = f.Write(data)
	}
	if err != nil {
		f.Close()
		return "", cleanup, err
	}
	return f.Name(), cleanup, f.Close()
}

// fetchStdin streams the job's stdin kept beside it into f, checking its
// size and SHA-256 against the job's. A server that is away is asked
// again, from the start, for as long as the attempt holds its lease (as
// fetchInput does); a refusal ends it at once.
func (a *attempt) fetchStdin(ctx context.Context, f *os.File) error {
	b := backoff.New(200*time.Millisecond, 2*time.Second)
	warned := false
	for {
		err := a.downloadStdin(ctx, f)
		if err == nil {
			if warned {
				a.log.Info("server reachable again; the job's stdin arrived")
			}
			return nil
		}
		if !errors.Is(err, spool.ErrUnavailable) && !errors.Is(err, spool.ErrThrottled) {
			return err
		}
		if why := a.stopReason(); why != "" {
			return fmt.Errorf("%s (last error: %w)", why, err)
		}
		if !warned {
			a.log.Warn("cannot fetch the job's stdin; retrying", "error", err)
			warned = true
		}
		if werr := b.Wait(ctx); werr != nil {
			return err
		}
	}
}

// downloadStdin is one try of fetchStdin: f holds the whole stdin after
// it, or an error says why not (a cut transfer is spool.ErrUnavailable,
// so it is tried again).
func (a *attempt) downloadStdin(ctx context.Context, f *os.File) error {
	p := a.job.GetParams()
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return err
	}
	if err := f.Truncate(0); err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, a.w.rest.URL("/api/v1/jobs/"+url.PathEscape(a.job.GetJobId())+"/stdin"), nil)
	if err != nil {
		return err
	}
	req.Header.Set(wire.TaskTokenHeader, a.lease.GetTaskToken())
	resp, err := a.w.rest.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	sum := sha256.New()
	n, err := io.Copy(io.MultiWriter(f, sum), resp.Body)
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		// The file is written locally; a failure of its writes is the
		// worker's disk, not the server.
		var pe *os.PathError
		if errors.As(err, &pe) {
			return fmt.Errorf("writing the job's stdin: %w", err)
		}
		return fmt.Errorf("%w: the job's stdin broke off after %d of %d bytes: %v", spool.ErrUnavailable, n, p.GetStdinSize(), err)
	}
	return checkStdin(n, sum, p.GetStdinSize(), p.GetStdinSha256())
}

// checkStdin compares what arrived with what the job's stdin is.
func checkStdin(n int64, sum hash.Hash, size int64, want string) error {
	if n != size {
		return fmt.Errorf("%w: the job's stdin came as %d bytes, not its %d", spool.ErrUnavailable, n, size)
	}
	if got := hex.EncodeToString(sum.Sum(nil)); want != "" && got != want {
		return fmt.Errorf("the job's stdin arrived with SHA-256 %s, not its %s: the blob store holds other bytes than were uploaded", got, want)
	}
	return nil
}
