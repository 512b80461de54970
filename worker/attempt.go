package worker

import (
	"context"
	"io"
	"log/slog"
	"os"
	"sync"
	"time"

	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	spoolv1 "github.com/spool-run/spool/gen/spool/v1"
	"github.com/spool-run/spool/internal/batcher"
	"github.com/spool-run/spool/internal/capture"
	"github.com/spool-run/spool/internal/events"
	"github.com/spool-run/spool/internal/mask"
	"github.com/spool-run/spool/internal/outbox"
)

// quickJob is how long an attempt's sender and heartbeat wait, once its
// command has started, for a command that ends at once. Such a command's
// events and result then go in one CompleteJob, with no heartbeat, instead
// of a publish of PROCESS_START, another of the rest, and a heartbeat the
// server writes: the calls a short job costs, and the lease, just granted,
// needs no renewal yet. It is no longer than the flush interval of a
// followed job, so someone following a longer one sees no difference. It
// counts from the command's start, not the attempt's: on a busy machine,
// making the job's directory and outbox and starting the process can take
// longer than the command itself, and a window that counted them would
// close on most short jobs, each then costing the server two more writes
// and making the machine busier still.
const quickJob = 20 * time.Millisecond

// quickSetup bounds the wait for the command to start: an attempt whose
// setup takes longer (fetching a batch's input from a server that is away,
// say) has its lease renewed and its news heard as any other. It is well
// under the shortest heartbeat interval (1 s), so the first renewal is
// never late.
const quickSetup = 500 * time.Millisecond

// awaitQuickEnd waits up to quickJob after the command started (started),
// and up to quickSetup for it to start, for it to end (ended, then true:
// the end is in the outbox), or until ctx ends.
func awaitQuickEnd(ctx context.Context, started, ended <-chan struct{}) bool {
	t := time.NewTimer(quickSetup)
	defer t.Stop()
	for {
		select {
		case <-ended:
			return true
		case <-started:
			started = nil
			t.Reset(quickJob)
		case <-t.C:
			return false
		case <-ctx.Done():
			return false
		}
	}
}

// pipeDrain is how long output may keep arriving after the command exits
// (from processes that escaped its group) before the pipes, or the
// terminal, are closed.
const pipeDrain = 5 * time.Second

// attempt is one leased run of a job.
type attempt struct {
	w     *Worker
	lease *spoolv1.JobLease
	job   *spoolv1.Job
	log   *slog.Logger
	ob    *outbox.Outbox
	out   *batcher.OutputBatcher
	// pace spaces the publishes while nobody watches the job.
	pace *pace
	// ownDir is the attempt's own directory (jobdir.go), once made.
	ownDir string

	// lines orders lines between the two output streams: each read's lines
	// go to the outbox, then to the batcher, in the same order for both.
	lines sync.Mutex

	// started is closed once the command has started; ended once it is
	// over and how it ended is in the outbox (or the worker was killed).
	// ended may come without started: the command could not start.
	started chan struct{}
	ended   chan struct{}

	// hide hides the job's secrets in its output (see masker).
	maskOnce sync.Once
	hide     *mask.Masker

	mu      sync.Mutex
	proc    *process
	stopWhy string // why spool stopped the command; "" if it ended by itself
	lost    bool   // the lease is gone: another attempt may own the job
	retry   bool   // stopped by a worker shutdown: hand the job back
}

// onLines takes the lines one read of the command's output produced: they
// go to disk first (so a worker killed now loses none of them), then to the
// batcher, which decides when they are sent.
func (a *attempt) onLines(lines []events.Line) {
	a.lines.Lock()
	defer a.lines.Unlock()
	if a.w.isKilled() {
		return // the worker is gone: its outboxes stay as they are
	}
	// The lines and the batches they complete go to disk in one write.
	a.ob.Hold()
	err := a.ob.AppendLines(lines)
	if err == nil {
		for _, l := range lines {
			a.out.Line(l)
		}
	}
	if rerr := a.ob.Release(); err == nil {
		err = rerr
	}
	if err != nil {
		a.spoolFailed(err)
	}
}

// emit appends a process event the batcher produced to the outbox. It
// runs under the batcher's lock, so it must not call back into the
// batcher.
func (a *attempt) emit(ev *spoolv1.JobEvent) {
	if a.w.isKilled() {
		return // the worker is gone: its outboxes stay as they are
	}
	if err := a.ob.Append(ev); err != nil {
		a.spoolFailed(err)
	}
	a.pace.due()
}

// emitBatch appends a batch the batcher produced to the outbox, as a
// reference to its lines, already on disk. It runs as emit does. A batch
// cut because it was full may wait for the next call (see pace); one cut
// for time (the first lines after a quiet spell, the flush interval, the
// command's end) goes now, and takes the full ones with it.
func (a *attempt) emitBatch(b events.Batch, r batcher.Reason) {
	if a.w.isKilled() {
		return
	}
	a.w.metrics.batchLines.Record(context.Background(), int64(len(b.Lines)))
	if err := a.ob.AppendBatch(b); err != nil {
		a.spoolFailed(err)
	}
	if r != batcher.ReasonSize && r != batcher.ReasonBytes {
		a.pace.due()
	}
}

// spoolFailed stops the command after the outbox could not be written: its
// output would be lost from here on. The sender hands the job back once
// what was written is delivered, and the worker takes no work until the
// directory can be written again.
func (a *attempt) spoolFailed(err error) {
	a.w.spool.broke(err)
	a.mu.Lock()
	first := a.stopWhy == ""
	a.mu.Unlock()
	if first {
		a.log.Error("cannot write the spool directory; stopping the job", "dir", a.w.cfg.SpoolDir, "error", err)
	}
	a.stop("the worker could not write its spool directory: " + err.Error())
}

// stop ends the command (SIGTERM, then SIGKILL after the kill grace), once,
// for the first reason given.
func (a *attempt) stop(why string) {
	a.mu.Lock()
	// A command that ended by itself was not stopped, whatever news comes
	// after (a held heartbeat answers "finished" once the job completes).
	if a.stopWhy != "" || (a.proc != nil && a.proc.hasExited()) {
		a.mu.Unlock()
		return
	}
	a.stopWhy = why
	p := a.proc
	a.mu.Unlock()
	a.log.Info("stopping the command", "reason", why)
	if p != nil {
		p.stop(a.w.cfg.KillGrace)
	}
}

// leaseLost stops the command and everything it would send: another
// attempt owns the job now (or it is finished).
func (a *attempt) leaseLost(reason string) {
	a.mu.Lock()
	a.lost = true
	a.mu.Unlock()
	a.stop("lease lost: " + reason)
}

// setProc records the started process; if a stop came first, it applies now.
func (a *attempt) setProc(p *process) {
	a.mu.Lock()
	a.proc = p
	stopped := a.stopWhy != ""
	a.mu.Unlock()
	if stopped {
		p.stop(a.w.cfg.KillGrace)
	}
}

// keepsGoing reports whether the attempt is still the job's own: its
// lease is not lost, and the worker is not handing it back.
func (a *attempt) keepsGoing() bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return !a.lost && !a.retry
}

func (a *attempt) stopReason() string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.stopWhy
}

// execute prepares the directory, runs the command with its output captured
// into the batcher, and returns the result. The events it emits: output
// lines, PROCESS_START and PROCESS_END around the command, PROCESS_ERROR
// when it could not run or spool stopped it.
func (a *attempt) execute(ctx context.Context) *spoolv1.JobResult {
	res := &spoolv1.JobResult{StartedAt: timestamppb.Now(), ExitCode: -1}
	dir, cleanup, err := a.prepareDir(ctx)
	defer cleanup()
	if err != nil {
		return a.failed(res, err.Error())
	}
	if why := a.stopReason(); why != "" {
		return a.failed(res, why)
	}
	files, cleanupFiles, err := a.prepareScatter(ctx)
	defer cleanupFiles()
	if err != nil {
		return a.failed(res, err.Error())
	}
	stdin, cleanupStdin, err := a.stdinFile(ctx, files)
	defer cleanupStdin()
	if err != nil {
		return a.failed(res, "could not write the job's stdin: "+err.Error())
	}
	argv, text := command(a.job.GetParams())
	p, err := startProcess(argv, dir, append(a.env(), files.env(a.job.GetParams().GetScatter())...), stdin, a.job.GetParams().GetPty(), a.w.user.credential())
	if err != nil {
		return a.failed(res, startError(text, dir, a.w.cfg.ID, err))
	}
	a.out.Event(&spoolv1.JobEvent{EventType: spoolv1.EventType_EVENT_TYPE_PROCESS_START, EventData: &spoolv1.JobEvent_ProcessStart{
		ProcessStart: &spoolv1.ProcessStartEvent{Pid: int32(p.pid()), Command: text, WorkerId: a.w.cfg.ID, Pty: p.terminal}}})
	a.setProc(p)
	close(a.started)
	if t := a.job.GetParams().GetTimeout(); t != nil && t.AsDuration() > 0 {
		timer := time.AfterFunc(t.AsDuration(), func() { a.stop("timed out after " + t.AsDuration().String()) })
		defer timer.Stop()
	}
	a.captureUntilExit(p)
	ranFor, finished := time.Since(p.started), timestamppb.Now()
	// The files the command left are kept before the job is completed,
	// whatever its exit code; the time that takes is not the command's.
	if a.keepsGoing() {
		a.collectArtifacts(ctx, dir)
	}

	code, signal := p.exit()
	res.ExitCode, res.FinishedAt = code, finished
	why := a.stopReason()
	if why != "" {
		res.Error = why
		a.out.Event(processError(why))
	} else if signal != "" {
		res.Error = "killed by a signal (" + signal + ")"
	} else if code == 0 {
		out, err := files.readResult()
		if err != nil {
			res.Error = err.Error()
			a.out.Event(processError(res.Error))
		}
		res.Output = out
	}
	a.out.Event(&spoolv1.JobEvent{EventType: spoolv1.EventType_EVENT_TYPE_PROCESS_END, EventData: &spoolv1.JobEvent_ProcessEnd{
		ProcessEnd: &spoolv1.ProcessEndEvent{ExitCode: code, Signal: signal, Duration: durationpb.New(ranFor)}}})
	return res
}

// captureUntilExit reads the output streams into the batcher until the
// process has exited and its pipes (or its terminal) are drained.
func (a *attempt) captureUntilExit(p *process) {
	maxLine := int(a.job.GetExecutionConfig().GetBatching().GetMaxBatchBytes())
	if maxLine <= 0 {
		maxLine = 256 << 10
	}
	type stream struct {
		r    io.Reader
		opts capture.Options
	}
	var streams []stream
	if p.terminal {
		// The terminal's one stream is the job's stdout. The terminal
		// ended every line with "\r\n"; the lines are kept as the
		// program wrote them.
		streams = []stream{{terminalReader{p.stdout}, capture.Options{Stream: spoolv1.StreamType_STREAM_TYPE_STDOUT, StripCR: true}}}
	} else {
		streams = []stream{
			{p.stdout, capture.Options{Stream: spoolv1.StreamType_STREAM_TYPE_STDOUT}},
			{p.stderr, capture.Options{Stream: spoolv1.StreamType_STREAM_TYPE_STDERR}},
		}
	}
	var wg sync.WaitGroup
	for _, s := range streams {
		wg.Go(func() {
			s.opts.MaxLine, s.opts.Clock = maxLine, a.w.clock
			// Masked before it is cut into lines and pieces, so a secret
			// is found however the reads and the cuts fall.
			if err := capture.Chunks(mask.Reader(s.r, a.masker()), s.opts, a.onLines); err != nil && !isClosedPipe(err) {
				a.log.Warn("reading the command's output failed", "stream", s.opts.Stream.String(), "error", err)
			}
		})
	}
	drained := make(chan struct{})
	go func() { wg.Wait(); close(drained) }()
	<-p.done
	select {
	case <-drained:
	case <-time.After(pipeDrain):
		// Something outside the command's process group still holds the
		// pipes or the terminal; the job is over, so stop reading.
		p.closeOutput()
		<-drained
	}
	p.closeOutput()
}

// failed records that the command could not run.
func (a *attempt) failed(res *spoolv1.JobResult, why string) *spoolv1.JobResult {
	a.out.Event(processError(why))
	res.Error, res.FinishedAt = why, timestamppb.Now()
	return res
}

func processError(msg string) *spoolv1.JobEvent {
	return &spoolv1.JobEvent{EventType: spoolv1.EventType_EVENT_TYPE_PROCESS_ERROR,
		EventData: &spoolv1.JobEvent_ProcessError{ProcessError: &spoolv1.ProcessErrorEvent{Message: msg}}}
}

// env is the job's environment (see jobEnv), as its user's (RunAs), then
// its secrets.
func (a *attempt) env() []string {
	env := append(jobEnv(a.w.user.environ(os.Environ(), a.ownDir), a.w.cfg.PassEnv, a.job), a.artifactEnv()...)
	return append(env, secretEnv(a.lease.GetSecrets())...)
}
