package cli

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/spool-run/spool"
	"github.com/spool-run/spool/client"
	"github.com/spool-run/spool/internal/backoff"
)

// timedOut is spool's exit status when --timeout runs out, the status
// timeout(1) uses, so scripts tell it from a job's failure.
var timedOut = exitError{code: 124}

// How often jobs wait asks about its jobs: soon at first, so a short job
// costs no long pause, then less and less often, so a long wait costs the
// server little.
const (
	waitPollFirst = 100 * time.Millisecond
	waitPollMax   = 2 * time.Second
)

func newJobsWaitCmd(e *env) *cobra.Command {
	var cfg jobsWaitConfig
	cmd := &cobra.Command{
		Use:   "wait [flags] JOB_ID...",
		Short: "Wait until jobs end; exit as the first that failed did (0 if all succeeded)",
		Long: `Wait until every job named has ended, without printing their output, saying
on stderr how each ended as it does. The exit status is the job's exit code
for one job; for several, the exit code of the first job to fail (in the
order they failed), or 0 when all succeeded. A job that failed or was
cancelled without an exit code (it never ran, its worker was lost) counts
as 1. Waiting is all it does: Ctrl-C or --timeout leave the jobs running.`,
		Example: `  spool jobs wait JOB
  spool jobs wait --timeout 10m JOB1 JOB2 JOB3
  id=$(spool submit -- make test) && spool jobs wait "$id" && echo passed`,
		Args:              cobra.MinimumNArgs(1),
		ValidArgsFunction: completeJobArg(e, true, activeStates...),
		RunE: func(cmd *cobra.Command, args []string) error {
			cfg.jobIDs = args
			return runJobsWait(cmd.Context(), cfg, e)
		},
	}
	cmd.Flags().Var(secondsOrDuration{&cfg.timeout}, "timeout", "give up after this long (90s, 10m, or seconds; 0: never) and exit 124, as timeout(1) does")
	return cmd
}

// jobsWaitConfig is what `spool jobs wait` is told on its command line.
type jobsWaitConfig struct {
	jobIDs  []string
	timeout time.Duration
}

func runJobsWait(ctx context.Context, cfg jobsWaitConfig, e *env) error {
	c, err := e.client()
	if err != nil {
		return err
	}
	return waitJobs(ctx, e, c, cfg.jobIDs, cfg.timeout)
}

// waitJobs waits until each of the jobs ids is final, reporting each as it
// ends, and returns the error that makes spool exit with the status of the
// first failure (nil when all succeeded).
func waitJobs(ctx context.Context, e *env, c *client.Client, ids []string, timeout time.Duration) error {
	ids = uniq(ids)
	// Every id is checked before any waiting: a typo is told at once, not
	// after the other jobs have taken an hour.
	jobs := make([]*spool.Job, len(ids))
	for i, id := range ids {
		j, err := c.Job(ctx, id)
		if err != nil {
			return err
		}
		jobs[i] = j
	}
	waitCtx := ctx
	if timeout > 0 {
		var cancel context.CancelFunc
		waitCtx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
	}
	notice := &reconnectNotice{w: e.errOut}
	poll := backoff.New(waitPollFirst, waitPollMax)
	var failed *exitError // the first failure's status
	for {
		jobs = reportEnded(e, jobs, &failed)
		if len(jobs) == 0 {
			if failed != nil {
				return *failed
			}
			return nil
		}
		err := poll.Wait(waitCtx)
		if err == nil {
			jobs, err = refresh(waitCtx, c, jobs, notice)
		}
		switch {
		case err == nil:
		case ctx.Err() != nil:
			fmt.Fprintf(e.errOut, "spool: stopped waiting; still not done: %s\n", notDone(jobs))
			return interrupted
		case waitCtx.Err() != nil:
			fmt.Fprintf(e.errOut, "spool: gave up after %s; still not done: %s\n", timeout, notDone(jobs))
			return timedOut
		default:
			return err
		}
	}
}

// reportEnded says how each final job of jobs ended, in the order they
// ended, notes the first failure's exit status, and returns the others.
func reportEnded(e *env, jobs []*spool.Job, failed **exitError) []*spool.Job {
	var ended, left []*spool.Job
	for _, j := range jobs {
		if j.State.IsFinal() {
			ended = append(ended, j)
		} else {
			left = append(left, j)
		}
	}
	// Jobs that ended between two polls are put in order by the server's
	// clock: the time of their last change, which ending was.
	slices.SortStableFunc(ended, func(a, b *spool.Job) int {
		return a.UpdatedAt.Compare(b.UpdatedAt)
	})
	for _, j := range ended {
		fmt.Fprintf(e.errOut, "%s %s\n", j.ID, outcome(j))
		if *failed == nil && j.State != spool.Succeeded {
			code := 1
			if c := exitCode(j); c > 0 {
				code = c
			}
			*failed = &exitError{code: code}
		}
	}
	return left
}

// refresh asks the server for each job again. While the server cannot be
// reached it keeps trying (saying so once): the jobs go on without it, and
// the wait should outlast a restart.
func refresh(ctx context.Context, c *client.Client, jobs []*spool.Job, notice *reconnectNotice) ([]*spool.Job, error) {
	fresh := make([]*spool.Job, 0, len(jobs))
	for _, j := range jobs {
		got, err := c.Job(ctx, j.ID)
		switch {
		case err == nil:
			notice.resumed()
			fresh = append(fresh, got)
		case errors.Is(err, spool.ErrUnavailable) && ctx.Err() == nil:
			notice.lost(err, 0)
			fresh = append(fresh, j)
		default:
			return jobs, fmt.Errorf("job %s: %w", j.ID, err)
		}
	}
	return fresh, nil
}

// notDone lists jobs with their states: "019a… (running), 019b… (queued)".
func notDone(jobs []*spool.Job) string {
	s := make([]string, len(jobs))
	for i, j := range jobs {
		s[i] = fmt.Sprintf("%s (%s)", j.ID, j.State.String())
	}
	return strings.Join(s, ", ")
}

// uniq is ids without repeats, in their first order: a job named twice is
// waited for, and reported, once.
func uniq(ids []string) []string {
	var out []string
	for _, id := range ids {
		if !slices.Contains(out, id) {
			out = append(out, id)
		}
	}
	return out
}
