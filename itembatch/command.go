package itembatch

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os/exec"
	"time"
	"unicode/utf8"
)

// ErrBadBatcherOutput is wrapped by the error FromCommand returns when the
// custom batcher misbehaves: its output is not one JSON array a line, it is
// too large, or the batcher exits with an error. Callers tell it apart from
// their own mistakes (a command that cannot start, a cancelled context)
// because it points at the batcher's author.
var ErrBadBatcherOutput = errors.New("itembatch: bad output from the custom batcher")

// maxBatcherOutput bounds what FromCommand reads from a batcher, so that one
// stuck in a loop cannot fill the memory of the machine that runs it.
const maxBatcherOutput = 1 << 30

// batcherWaitDelay is how long FromCommand waits, once the batcher has
// exited or been killed, for its standard output to close. Something the
// batcher started in the background may hold it open forever; without a
// bound, FromCommand would wait for it, even after its context ended.
const batcherWaitDelay = 2 * time.Second

// excerptBytes is how much of a bad output line an error shows: enough to
// recognise it, short enough not to flood a terminal with a huge line.
const excerptBytes = 80

// FromCommand runs a custom batcher, for cuts that a Config cannot express.
//
// cmd is a command the caller built (e.g. exec.Command("sh", "-c", script))
// and has not started. It gets the items as JSON Lines on its standard input
// and must write one JSON array a line on its standard output, each array
// one batch. FromCommand sets cmd.Stdin and cmd.Stdout, which must be nil;
// cmd.Stderr is left as the caller set it, so the batcher's messages reach
// the person. If cmd.WaitDelay is 0 it is set to 2 seconds, which bounds the
// wait for background processes that keep the output open.
//
// Blank output lines are skipped. Empty arrays are dropped with a Warning, as
// a job with nothing to do is not what anyone asked for. Items inside the
// arrays are compacted; they need not be the input items, so a batcher may
// also transform them.
//
// Anything that is not a JSON array a line (garbage, an object, a truncated
// line, invalid JSON or UTF-8), a non-zero exit, or more than 1 GiB of output
// is an error wrapping ErrBadBatcherOutput. Errors about a line give its
// number and at most 80 bytes of it. On bad output the batcher is killed at
// once rather than left to finish work that will be thrown away.
//
// The batcher is killed when ctx ends, and FromCommand then returns an error
// wrapping ctx.Err(). Only the batcher's own process is killed, not those it
// started: an sh -c script should exec its last command so that the kill
// reaches the program doing the work.
func FromCommand(ctx context.Context, cmd *exec.Cmd, items []Item) ([]Batch, []Warning, error) {
	return fromCommand(ctx, cmd, items, maxBatcherOutput)
}

// fromCommand is FromCommand with the output limit as a parameter, so that
// tests can cross it without writing a gigabyte.
func fromCommand(ctx context.Context, cmd *exec.Cmd, items []Item, limit int64) ([]Batch, []Warning, error) {
	if cmd.Stdin != nil || cmd.Stdout != nil {
		return nil, nil, errors.New("itembatch: FromCommand connects the batcher's stdin and stdout itself; leave cmd.Stdin and cmd.Stdout nil")
	}
	if err := ctx.Err(); err != nil {
		return nil, nil, fmt.Errorf("itembatch: custom batcher not started: %w", err)
	}
	// Compacting makes sure no item spans lines, which would break JSON
	// Lines; items from ReadItems are compact already, but a Go client may
	// have built its own.
	var in bytes.Buffer
	for i, it := range items {
		if err := json.Compact(&in, it); err != nil {
			return nil, nil, fmt.Errorf("itembatch: item %d is not valid JSON: %w", i, err)
		}
		in.WriteByte('\n')
	}

	runCtx, stop := context.WithCancel(ctx)
	defer stop()
	out := &batcherOutput{limit: limit, stop: stop}
	cmd.Stdin = &in
	// An io.Writer that is not an *os.File makes exec copy the output in a
	// goroutine of its own, which lets WaitDelay close the pipe if
	// something keeps it open. Reading a StdoutPipe ourselves would not.
	cmd.Stdout = out
	if cmd.WaitDelay == 0 {
		cmd.WaitDelay = batcherWaitDelay
	}
	if err := cmd.Start(); err != nil {
		return nil, nil, fmt.Errorf("itembatch: starting the custom batcher: %w", err)
	}
	waited := make(chan struct{})
	go func() {
		select {
		case <-runCtx.Done():
			_ = cmd.Process.Kill() // fails only if it has already exited
		case <-waited:
		}
	}()
	err := cmd.Wait()
	close(waited)

	// Wait returns only after exec's copying goroutine is done, so out can
	// be read here without a lock.
	switch {
	case out.err != nil:
		// The batcher was killed for it; the exit status says nothing more.
		return nil, nil, out.err
	case err != nil && ctx.Err() != nil:
		return nil, nil, fmt.Errorf("itembatch: custom batcher stopped: %w", ctx.Err())
	case errors.Is(err, exec.ErrWaitDelay):
		return nil, nil, fmt.Errorf("%w: it exited, but something it started kept its output open", ErrBadBatcherOutput)
	case err != nil:
		var exit *exec.ExitError
		if errors.As(err, &exit) {
			return nil, nil, fmt.Errorf("%w: it failed: %w", ErrBadBatcherOutput, err)
		}
		return nil, nil, fmt.Errorf("itembatch: running the custom batcher: %w", err)
	}
	// The last line may lack its newline; it is only complete now.
	if err := out.flush(); err != nil {
		return nil, nil, err
	}
	return out.batches, out.warnings, nil
}

// batcherOutput parses the batcher's output as it arrives, one line at a
// time, so that memory holds the batches and one line rather than the whole
// output too, and so that bad output stops the batcher early.
type batcherOutput struct {
	limit int64
	stop  func() // kills the batcher

	total    int64  // bytes written so far
	partial  []byte // the line being written, without its newline
	lineNo   int    // of the last complete line
	batches  []Batch
	warnings []Warning
	err      error // the first error; once set, output is refused
}

// Write is called by exec's copying goroutine only.
func (o *batcherOutput) Write(p []byte) (int, error) {
	if o.err != nil {
		return 0, o.err
	}
	o.total += int64(len(p))
	if o.total > o.limit {
		return 0, o.fail(fmt.Errorf("%w: more than %s of output", ErrBadBatcherOutput, byteCount(int(o.limit))))
	}
	n := len(p)
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		if i < 0 {
			o.partial = append(o.partial, p...)
			break
		}
		line := p[:i]
		if len(o.partial) > 0 {
			o.partial = append(o.partial, line...)
			line = o.partial
		}
		o.lineNo++
		if err := o.parse(line); err != nil {
			return 0, o.fail(err)
		}
		o.partial = o.partial[:0]
		p = p[i+1:]
	}
	return n, nil
}

// flush parses a last line that had no newline.
func (o *batcherOutput) flush() error {
	if len(o.partial) == 0 {
		return nil
	}
	o.lineNo++
	return o.parse(o.partial)
}

func (o *batcherOutput) fail(err error) error {
	o.err = err
	o.stop()
	return err
}

// parse turns one output line into a batch.
func (o *batcherOutput) parse(line []byte) error {
	v := trimSpace(line)
	if len(v) == 0 {
		return nil
	}
	if !utf8.Valid(v) {
		return o.bad("is not valid UTF-8", v)
	}
	if v[0] != '[' {
		return o.bad("is not a JSON array", v)
	}
	// Compacting the whole line first leaves every element compact, so
	// one Unmarshal splits it into items that need no more work.
	var compact bytes.Buffer
	if err := json.Compact(&compact, v); err != nil {
		return o.bad(fmt.Sprintf("is not valid JSON (%v)", err), v)
	}
	var items []json.RawMessage
	if err := json.Unmarshal(compact.Bytes(), &items); err != nil {
		return o.bad(fmt.Sprintf("is not valid JSON (%v)", err), v)
	}
	if len(items) == 0 {
		o.warnings = append(o.warnings, Warning(fmt.Sprintf(
			"the custom batcher's output line %d is an empty batch; dropped", o.lineNo)))
		return nil
	}
	o.batches = append(o.batches, Batch{Items: items})
	return nil
}

// bad describes a bad line, showing the start of it.
func (o *batcherOutput) bad(what string, line []byte) error {
	shown, more := line, ""
	if len(shown) > excerptBytes {
		cut := excerptBytes
		// Cut between characters, so the excerpt does not end in a
		// broken one that %q would show as escapes.
		for cut > 0 && !utf8.RuneStart(shown[cut]) {
			cut--
		}
		shown, more = shown[:cut], "..."
	}
	return fmt.Errorf("%w: output line %d %s: %q%s", ErrBadBatcherOutput, o.lineNo, what, shown, more)
}
