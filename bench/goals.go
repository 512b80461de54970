package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"os"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/spool-run/spool"
	"github.com/spool-run/spool/client"
)

// The goals spool's performance is held to on a 2-CPU machine with the
// embedded SQLite store (synchronous=full).
const (
	goalLinesPerSecond = 1_000_000
	goalServerRSS      = 64 << 20
	goalQueuePerSecond = 5_000
	goalEnqueueP99     = 5 * time.Millisecond
	goalNoopShare      = 0.80
	goalLiveP99        = 50 * time.Millisecond
	goalFewerWrites    = 40
	goalReadLog        = 5 * time.Millisecond
	goalCatchUp        = time.Second
)

// goalRow is one row of the goals table: spool's figure, the baseline it
// is compared with in the same run, the goal, and whether it is met.
type goalRow struct {
	measure, spool, baseline, goal string
	met                            bool
	// info: a figure for reference, with no goal of its own.
	info bool
}

// verdict is the last column of the row.
func (g goalRow) verdict() string {
	switch {
	case g.info:
		return ""
	case g.met:
		return "met"
	}
	return "not yet"
}

// goalStep measures a group of rows.
type goalStep struct {
	name string
	run  func() ([]goalRow, error)
}

// runGoals measures and prints each row of the goals table as it is done.
// Every server runs in a process of its own, with the worker in this one,
// so a server's memory is its own and it can be killed and restarted.
// The baselines: the same work stored a line at a time (max_batch_size 1),
// leased one job a call, or the processes this machine starts itself.
// With only set, it runs only that group of rows (lines, many, queue,
// noop, live, read, catchup, delayed, compression or river). The river rows compare the queue on
// PostgreSQL at pgURL with River's on the same server ("": left out).
func runGoals(ctx context.Context, job emitter, sz sizes, only, pgURL string, log *slog.Logger) error {
	fmt.Printf("goals: servers in processes of their own on the embedded SQLite store (synchronous=full)\n\n")
	t := newTable("goals", runCommand(), []int{-50, -22, -34, -24}, "measure", "spool", "baseline (same run)", "goal", "")
	steps := []goalStep{
		{"lines", func() ([]goalRow, error) {
			return linesGoal(ctx, job, sz.goalFewJobs, sz.goalLines, 20, sz.goalFewJobs, false, log)
		}},
		{"many", func() ([]goalRow, error) {
			return linesGoal(ctx, job, sz.goalManyJobs, sz.goalLines, 12, sz.goalManyBaseline, true, log)
		}},
		{"queue", func() ([]goalRow, error) { return queueGoal(ctx, sz.queueJobs, log) }},
		{"noop", func() ([]goalRow, error) { return noopGoal(ctx, sz.noopJobs, log) }},
		{"live", func() ([]goalRow, error) { return liveGoals(ctx, job, sz, log) }},
		{"read", func() ([]goalRow, error) { return readGoal(ctx, job, sz, log) }},
		{"catchup", func() ([]goalRow, error) { return catchUpGoal(ctx, job) }},
		{"delayed", func() ([]goalRow, error) { return delayedGoal(ctx, pgURL, sz.delayedJobs, log) }},
		{"compression", compressionGoals},
		{"river", func() ([]goalRow, error) {
			if pgURL == "" {
				return nil, nil // no PostgreSQL to compare on (-postgres '')
			}
			return riverGoal(ctx, pgURL, sz.riverJobs, log)
		}},
		// Only when asked for: it needs moto_server, and minutes.
		{"s3items", func() ([]goalRow, error) {
			if only != "s3items" {
				return nil, nil
			}
			return s3ItemsGoal(ctx, sz.s3Lines, log)
		}},
	}
	if only != "" && !slices.ContainsFunc(steps, func(s goalStep) bool { return s.name == only }) {
		return fmt.Errorf("-goal %q: there is no such group of rows (lines, many, queue, noop, live, read, catchup, delayed, compression, river, s3items)", only)
	}
	for _, step := range steps {
		if only != "" && step.name != only {
			continue
		}
		rows, err := step.run()
		if err != nil {
			return err
		}
		for _, r := range rows {
			t.row(r.measure, r.spool, r.baseline, r.goal, r.verdict())
		}
	}
	fmt.Println()
	return nil
}

// onlySpool skips the lines rows' baselines (-only-spool).
var onlySpool bool

// linesGoal runs jobs jobs of lines lines on slots slots, then baselineJobs
// of them stored a line at a time, and reports lines/s (and, with rss, the
// server's peak memory).
func linesGoal(ctx context.Context, job emitter, jobs, lines, slots, baselineJobs int, rss bool, log *slog.Logger) ([]goalRow, error) {
	rate, peak, err := remoteLines(ctx, job, jobs, lines, slots, false, log)
	if err != nil {
		return nil, err
	}
	if onlySpool {
		return []goalRow{{measure: fmt.Sprintf("lines/s, %s jobs x %s lines, %d slots", thousands(float64(jobs)), thousands(float64(lines)), slots),
			spool: thousands(rate), baseline: "peak RSS " + mib(peak), info: true}}, nil
	}
	baseRate, basePeak, err := remoteLines(ctx, job, baselineJobs, lines, slots, true, log)
	if err != nil {
		return nil, err
	}
	jobsPerSecond, err := processRate(ctx, jobs, slots, job.lines(lines))
	if err != nil {
		return nil, err
	}
	machine := jobsPerSecond * float64(lines)
	of := ""
	if baselineJobs != jobs {
		of = fmt.Sprintf(" (%d jobs)", baselineJobs)
	}
	rows := []goalRow{{
		measure:  fmt.Sprintf("lines/s, %s jobs x %s lines, %d slots", thousands(float64(jobs)), thousands(float64(lines)), slots),
		spool:    thousands(rate),
		baseline: fmt.Sprintf("per line%s: %s (%.1fx)", of, thousands(baseRate), rate/baseRate),
		goal:     ">= " + thousands(goalLinesPerSecond),
		met:      rate >= goalLinesPerSecond,
	}}
	if rss {
		rows = append(rows, goalRow{
			measure:  "  the server's peak RSS in that run",
			spool:    mib(peak),
			baseline: fmt.Sprintf("per line%s: %s", of, mib(basePeak)),
			goal:     "<= " + mib(goalServerRSS),
			met:      peak > 0 && peak <= goalServerRSS,
		})
	}
	rows = append(rows, goalRow{
		measure:  "  the same jobs into a pipe, without spool",
		spool:    thousands(machine),
		baseline: fmt.Sprintf("spool: %.0f%% of it", 100*rate/machine),
		info:     true,
	})
	return rows, nil
}

// thousands formats a figure rounded to a whole number, with commas.
func thousands(f float64) string {
	s := strconv.FormatFloat(math.Round(f), 'f', 0, 64)
	for i := len(s) - 3; i > 0 && s[i-1] != '-'; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

func mib(b int64) string {
	if b == 0 {
		return "(unknown)"
	}
	return fmt.Sprintf("%.0f MB", float64(b)/(1<<20))
}

// remoteLines runs jobs jobs printing lines lines each as fast as they can
// on a fresh server and a worker with slots slots, and returns lines/s
// from the first submit to the last end, and the server's peak RSS.
func remoteLines(ctx context.Context, job emitter, jobs, lines, slots int, perLine bool, log *slog.Logger) (float64, int64, error) {
	r, err := startRemote(ctx, slots, perLine, log)
	if err != nil {
		return 0, 0, err
	}
	defer r.stop()
	start := time.Now()
	ids, err := submitAll(ctx, r.Client, jobs, client.SubmitParams{Argv: job.lines(lines)})
	if err != nil {
		return 0, 0, err
	}
	var done atomic.Int64
	stopProgress := progress(func() string { return fmt.Sprintf("%d of %d jobs done", done.Load(), jobs) })
	defer stopProgress()
	if err := waitAll(ctx, r.Client, ids, func() { done.Add(1) }); err != nil {
		return 0, 0, err
	}
	return float64(jobs*lines) / sinceStart(start), r.peakRSS(), nil
}

// submitAll submits n copies of s from 8 goroutines at once and returns
// the jobs' ids.
func submitAll(ctx context.Context, c *client.Client, n int, s client.SubmitParams) ([]string, error) {
	ids := make([]string, n)
	var next atomic.Int64
	var wg sync.WaitGroup
	errs := make([]error, 8)
	for w := range errs {
		wg.Go(func() {
			for i := next.Add(1) - 1; i < int64(n); i = next.Add(1) - 1 {
				j, _, err := c.Submit(ctx, s)
				if err != nil {
					errs[w] = err
					return
				}
				ids[i] = j.ID
			}
		})
	}
	wg.Wait()
	return ids, errors.Join(errs...)
}

// progress prints what status says on stderr every second, on one line,
// until the returned function is called; it clears the line then. It
// prints nothing when stderr is not a terminal.
func progress(status func() string) func() {
	if fi, err := os.Stderr.Stat(); err != nil || fi.Mode()&os.ModeCharDevice == 0 {
		return func() {}
	}
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(time.Second)
		defer t.Stop()
		for {
			select {
			case <-stop:
				fmt.Fprint(os.Stderr, "\r\033[K")
				return
			case <-t.C:
				fmt.Fprintf(os.Stderr, "\r\033[K  %s", status())
			}
		}
	}()
	return func() { close(stop); <-done }
}

// queueGoal measures the queue alone through the API, leasing ten jobs a
// call, and one job a call as the baseline, each on a fresh server.
func queueGoal(ctx context.Context, n int, log *slog.Logger) ([]goalRow, error) {
	var runs [2]queueRun
	for i, maxJobs := range []int{10, 1} {
		r, err := startRemote(ctx, 0, false, log)
		if err != nil {
			return nil, err
		}
		runs[i], err = queueThrough(ctx, r.url, r.key, n, maxJobs)
		if stopErr := r.stop(); err == nil {
			err = stopErr
		}
		if err != nil {
			return nil, err
		}
	}
	b, u := runs[0], runs[1]
	bp50, bp99 := percentiles(b.submits)
	up50, up99 := percentiles(u.submits)
	return []goalRow{{
		measure:  fmt.Sprintf("queue alone: jobs/s, %d jobs, %d clients", n, queueClients),
		spool:    thousands(b.perSecond),
		baseline: "one job a lease and a call: " + thousands(u.perSecond),
		goal:     ">= " + thousands(goalQueuePerSecond),
		met:      b.perSecond >= goalQueuePerSecond,
	}, {
		measure:  "  enqueue p50 / p99 under that load",
		spool:    latency{p50: bp50, p99: bp99}.String(),
		baseline: "one job a lease: " + latency{p50: up50, p99: up99}.String(),
		goal:     "p99 <= " + goalEnqueueP99.String(),
		met:      bp99 <= goalEnqueueP99,
	}}, nil
}

func percentiles(d []time.Duration) (p50, p99 time.Duration) {
	if len(d) == 0 {
		return 0, 0
	}
	s := slices.Sorted(slices.Values(d))
	return s[len(s)/2], s[len(s)*99/100]
}

// noopGoal measures no-op jobs against the processes this machine starts.
func noopGoal(ctx context.Context, n int, log *slog.Logger) ([]goalRow, error) {
	before := cpuNow(0, "")
	procs, err := processStartRate(ctx, n)
	if err != nil {
		return nil, err
	}
	machineCPU := before.perJob(cpuNow(0, ""), n, "bench", "commands")
	r, err := startRemote(ctx, noopSlots, false, log)
	if err != nil {
		return nil, err
	}
	jobs, jobsCPU, err := noopJobRate(ctx, r.Client, n, r.cmd.Process.Pid)
	if stopErr := r.stop(); err == nil {
		err = stopErr
	}
	if err != nil {
		return nil, err
	}
	return keepFigures([]goalRow{{
		measure:  fmt.Sprintf("no-op jobs (`true`), %d slots, %d jobs", noopSlots, n),
		spool:    fmt.Sprintf("%s jobs/s (%.0f%%)", thousands(jobs), 100*jobs/procs),
		baseline: fmt.Sprintf("machine: %s processes/s", thousands(procs)),
		goal:     fmt.Sprintf(">= %.0f%% of the machine", 100*goalNoopShare),
		met:      jobs >= goalNoopShare*procs,
	}, {
		measure: "  CPU a job, by process", spool: jobsCPU, baseline: machineCPU, info: true,
	}}), nil
}

// keepFigures leaves out the rows for reference that have no figure (the
// CPU by process, where /proc cannot be read).
func keepFigures(rows []goalRow) []goalRow {
	return slices.DeleteFunc(rows, func(g goalRow) bool { return g.info && g.spool == "" && g.baseline == "" })
}

// liveFigures are one server's live figures.
type liveFigures struct {
	slow      latency
	fastPer1k float64 // stored items per 1,000 lines, followed at 10,000 lines/s
}

// liveGoals measures live latency and the writes of a followed fast job,
// batched and stored a line at a time.
func liveGoals(ctx context.Context, job emitter, sz sizes, log *slog.Logger) ([]goalRow, error) {
	var figs [2]liveFigures
	for i, perLine := range []bool{false, true} {
		var err error
		if figs[i], err = live(ctx, job, sz, perLine, log); err != nil {
			return nil, err
		}
	}
	b, u := figs[0], figs[1]
	return []goalRow{{
		measure:  "live p50 / p99, a watched job at 10 lines/s",
		spool:    b.slow.String(),
		baseline: "per line: " + u.slow.String(),
		goal:     "p99 <= " + goalLiveP99.String(),
		met:      b.slow.p99 <= goalLiveP99,
	}, {
		measure:  "writes per 1,000 lines, watched at 10,000 lines/s",
		spool:    fmt.Sprintf("%.1f (%.0fx fewer)", b.fastPer1k, 1000/b.fastPer1k),
		baseline: fmt.Sprintf("per line: %.1f", u.fastPer1k),
		goal:     fmt.Sprintf(">= %dx fewer than lines", goalFewerWrites),
		met:      1000/b.fastPer1k >= goalFewerWrites,
	}}, nil
}

func live(ctx context.Context, job emitter, sz sizes, perLine bool, log *slog.Logger) (liveFigures, error) {
	var f liveFigures
	r, err := startRemote(ctx, 1, perLine, log)
	if err != nil {
		return f, err
	}
	defer r.stop()
	if f.slow, err = liveLatency(ctx, r.Client, r.Client, job, 10, 10*sz.slowSeconds); err != nil {
		return f, fmt.Errorf("latency at 10 lines/s: %w", err)
	}
	fast, err := liveLatency(ctx, r.Client, r.Client, job, 10000, 10000*sz.fastSeconds)
	if err != nil {
		return f, fmt.Errorf("latency at 10,000 lines/s: %w", err)
	}
	items, err := countItems(ctx, r.Client, fast.jobID)
	if err != nil {
		return f, err
	}
	f.fastPer1k = float64(items) * 1000 / float64(10000*sz.fastSeconds)
	return f, nil
}

// readGoal measures reading all the lines of a finished job, batched and
// stored a line at a time.
func readGoal(ctx context.Context, job emitter, sz sizes, log *slog.Logger) ([]goalRow, error) {
	var batches, lineEvents [2]time.Duration
	for i, perLine := range []bool{false, true} {
		r, err := startRemote(ctx, 1, perLine, log)
		if err != nil {
			return nil, err
		}
		id, err := runJob(ctx, r.Client, client.SubmitParams{Argv: job.lines(sz.goalLines)})
		if err == nil {
			batches[i], lineEvents[i], err = readWhole(ctx, r.Client, id, sz.goalLines)
		}
		if stopErr := r.stop(); err == nil {
			err = stopErr
		}
		if err != nil {
			return nil, err
		}
	}
	return []goalRow{{
		measure:  fmt.Sprintf("read all %s lines of a finished job (Connect)", thousands(float64(sz.goalLines))),
		spool:    round(batches[0]).String(),
		baseline: "stored per line: " + round(batches[1]).String(),
		goal:     "<= " + goalReadLog.String(),
		met:      batches[0] <= goalReadLog,
	}, {
		measure:  "  the same, made an event per line (ReadLog)",
		spool:    round(lineEvents[0]).String(),
		baseline: "stored per line: " + round(lineEvents[1]).String(),
		info:     true,
	}}, nil
}

// readWhole reads a finished job's whole log 21 times and returns the
// median time of a read: as the client receives it, in batches (the lines
// of each counted: what a reader that forwards, prints or searches them
// needs), and turned into an event per line (client.ReadLog).
func readWhole(ctx context.Context, c *client.Client, id string, lines int) (batches, lineEvents time.Duration, err error) {
	took := make([][2]time.Duration, 21)
	for i := range took {
		start := time.Now()
		n := 0
		for ev, err := range c.Events(ctx, id, client.StreamOptions{}).Batches() {
			if err != nil {
				return 0, 0, err
			}
			n += len(ev.Lines)
		}
		took[i][0] = time.Since(start)
		if n != lines {
			return 0, 0, fmt.Errorf("read %d lines of %d in batches", n, lines)
		}
		start = time.Now()
		log, err := c.ReadLog(ctx, id)
		if err != nil {
			return 0, 0, err
		}
		took[i][1] = time.Since(start)
		if got := countOutput(log); got != lines {
			return 0, 0, fmt.Errorf("read %d lines of %d", got, lines)
		}
	}
	var b, e []time.Duration
	for _, t := range took {
		b, e = append(b, t[0]), append(e, t[1])
	}
	bp50, _ := percentiles(b)
	ep50, _ := percentiles(e)
	return bp50, ep50, nil
}

// catchUpGoal kills the server while a job writes output, lets the job
// end while the server is away, starts the server again and measures how
// long until the job's output is all stored and the job is finished.
func catchUpGoal(ctx context.Context, job emitter) ([]goalRow, error) {
	const lines = 2000
	// The worker warns while the server is away, as it should; here that
	// is the point, not news.
	quiet := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError}))
	r, err := startRemote(ctx, 1, false, quiet)
	if err != nil {
		return nil, err
	}
	defer r.stop()
	submitted, _, err := r.Client.Submit(ctx, client.SubmitParams{Argv: job.paced(lines, 2000, "0s")})
	if err != nil {
		return nil, err
	}
	// Wait for the first line, so the job is running when the server goes.
	for _, err := range r.Client.Events(ctx, submitted.ID, client.StreamOptions{Follow: true}).All() {
		if err != nil {
			return nil, err
		}
		break
	}
	r.killServer()
	time.Sleep(2 * time.Second) // the job ends while the server is away
	if err := r.restartServer(); err != nil {
		return nil, err
	}
	back := time.Now()
	for {
		j, err := r.Client.Job(ctx, submitted.ID)
		if err == nil && j.State.IsFinal() {
			break
		}
		if time.Since(back) > time.Minute {
			return nil, fmt.Errorf("job %s did not finish within a minute of the server coming back (%v)", submitted.ID, err)
		}
		time.Sleep(5 * time.Millisecond)
	}
	caughtUp := time.Since(back)
	log2, err := r.Client.ReadLog(ctx, submitted.ID)
	if err != nil {
		return nil, err
	}
	if got := countOutput(log2); got != lines {
		return nil, fmt.Errorf("after the restart the job has %d lines of %d", got, lines)
	}
	return []goalRow{{
		measure:  "output caught up after the server comes back",
		spool:    round(caughtUp).String(),
		baseline: "-",
		goal:     "<= " + goalCatchUp.String(),
		met:      caughtUp <= goalCatchUp,
	}}, nil
}

func countOutput(log []*spool.Event) int {
	n := 0
	for _, ev := range log {
		n += len(ev.Lines)
	}
	return n
}
