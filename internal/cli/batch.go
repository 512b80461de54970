package cli

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spool-run/spool/client"
	"github.com/spool-run/spool/internal/jobjson"
	"github.com/spool-run/spool/internal/msgjobs"
)

// batchHelp is --batch's help: what a line is, and how each line's job
// is named so that the file can be submitted again.
const batchHelp = `submit the jobs of FILE ("-": spool's stdin), one a line: each line a JSON job spec, as spool consume reads them ({"argv": ["make", "test"]} or {"shell": "..."}, and env, dir, queue, timeout, max_attempts, retries, repo, ref, stdin, flush_interval ("200ms"), batch_lines, secrets: names of --secret flags given here), optionally with a "request_id". A line without one gets a request id made from its text, --queue and --request-id, so submitting the same file again finds the jobs it made instead of enqueueing them twice (an identical line repeated makes a job per copy); a new --request-id submits the file anew. Prints each job's line number and id, says which lines failed and why, and exits 1 if any did`

// The lines of a --batch file are read and sent batchCall jobs at a time,
// what the server takes in one call (client.SubmitBatch splits a round
// that holds more bytes than a call does); their outcomes are printed as
// each round returns. A line may hold at most maxBatchLine bytes (a job's
// stdin is at most 256 KiB, JSON-escaped perhaps six times that).
const (
	batchCall    = 1000
	maxBatchLine = 2 << 20
)

// batchFlags are the flags of `spool submit` that say what a job runs:
// with --batch, each job's line says it instead.
var batchFlags = []string{"shell", "env", "workdir", "timeout", "repo", "ref", "retries", "max-attempts", "stdin", "pty", "follow", "flush-interval", "batch-lines", "at", "in", "after", "priority", "notify"}

// batchLine is one line of a --batch file and what became of it.
type batchLine struct {
	n   int
	job client.SubmitParams
	err error // the line is no job, or the server refused it
	res client.BatchResult
}

// batchRun is one `spool submit --batch`.
type batchRun struct {
	cfg     submitConfig
	e       *env
	c       *client.Client
	held    map[string]string
	copies  map[[sha256.Size]byte]int // identical lines seen so far
	pending []batchLine
	jobs    int // lines of pending that are jobs
	read    int // lines read so far
	// shown: a progress line is on the terminal, to be written over.
	shown bool

	submitted, repeats, failed int
}

func runSubmitBatch(ctx context.Context, cfg submitConfig, e *env, changed func(string) bool) error {
	if len(cfg.argv) > 0 {
		return fmt.Errorf("--batch takes the jobs from %s, one a line; give no command besides", cfg.batch)
	}
	for _, f := range batchFlags {
		if changed(f) {
			return fmt.Errorf("--%s cannot go with --batch: each job's line says what it runs", f)
		}
	}
	held, err := cfg.secrets.secrets(os.LookupEnv)
	if err != nil {
		return err
	}
	var in io.Reader = e.in
	if cfg.batch != "-" {
		f, err := os.Open(cfg.batch)
		if err != nil {
			return fmt.Errorf("--batch: %w", err)
		}
		defer f.Close()
		in = f
	}
	c, err := e.client()
	if err != nil {
		return err
	}
	b := &batchRun{cfg: cfg, e: e, c: c, held: held, copies: map[[sha256.Size]byte]int{}}
	err = b.submit(ctx, in)
	b.clear()
	fmt.Fprintf(e.errOut, "spool: %s submitted", plural(b.submitted+b.repeats, "job"))
	if b.repeats > 0 {
		fmt.Fprintf(e.errOut, " (%d of them had been before)", b.repeats)
	}
	if b.failed > 0 {
		fmt.Fprintf(e.errOut, "; %s failed", plural(b.failed, "line"))
	}
	fmt.Fprintln(e.errOut)
	switch {
	case err != nil:
		return err
	case b.failed > 0:
		return exitError{1}
	}
	return nil
}

// submit reads the file and sends its jobs a call at a time, printing
// each line's outcome in the file's order as its call returns.
func (b *batchRun) submit(ctx context.Context, in io.Reader) error {
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 0, 64<<10), maxBatchLine)
	n := 0
	for sc.Scan() {
		n++
		b.read = n
		text := bytes.TrimSpace(sc.Bytes())
		if len(text) == 0 {
			continue
		}
		l := batchLine{n: n}
		l.job, l.err = b.parse(text)
		b.pending = append(b.pending, l)
		if l.err == nil {
			b.jobs++
		}
		if b.jobs == batchCall {
			if err := b.send(ctx); err != nil {
				return err
			}
		}
	}
	if err := b.send(ctx); err != nil {
		return err
	}
	switch err := sc.Err(); {
	case errors.Is(err, bufio.ErrTooLong):
		return fmt.Errorf("--batch %s: line %d is longer than %d MiB, more than a job carries; the lines before it were submitted", b.cfg.batch, n+1, maxBatchLine>>20)
	case err != nil:
		return fmt.Errorf("--batch %s: after line %d: %w", b.cfg.batch, n, err)
	}
	return nil
}

// parse reads a line's job and gives it its request id.
func (b *batchRun) parse(line []byte) (client.SubmitParams, error) {
	spec, id, err := splitRequestID(line)
	if err != nil {
		return client.SubmitParams{}, err
	}
	job, err := msgjobs.ParseSpec(spec, b.held)
	if err != nil {
		return job, err
	}
	if job.Queue == "" {
		job.Queue = b.cfg.spec.queue
	}
	if id == "" {
		sum := sha256.Sum256(line)
		copies := b.copies[sum]
		b.copies[sum]++
		id = batchRequestID(b.cfg.spec.requestID, b.cfg.spec.queue, line, copies)
	}
	job.RequestID = id
	return job, nil
}

// batchRequestID is the request id of a line that names none: the same
// line of the same file, submitted again with the same --queue and
// --request-id, gets the same one, so it finds the job it made; copies
// earlier in the file of an identical line make it another.
func batchRequestID(salt, queue string, line []byte, copies int) string {
	h := sha256.New()
	fmt.Fprintf(h, "%d\x00%s\x00%d\x00%s\x00", len(salt), salt, copies, queue)
	h.Write(line)
	return "batch-" + hex.EncodeToString(h.Sum(nil)[:20])
}

// splitRequestID takes a line's "request_id" out of it, for the rest to
// be read as a job spec (which has no such field). A line that is no JSON
// object is left as it is, for ParseSpec to say what is wrong with it.
func splitRequestID(line []byte) (spec []byte, id string, err error) {
	if !bytes.Contains(line, []byte(`"request_id"`)) {
		return line, "", nil
	}
	var obj map[string]json.RawMessage
	if json.Unmarshal(line, &obj) != nil {
		return line, "", nil
	}
	raw, ok := obj["request_id"]
	if !ok {
		return line, "", nil
	}
	if err := json.Unmarshal(raw, &id); err != nil || id == "" {
		return nil, "", errors.New(`"request_id" must be a string, not empty`)
	}
	delete(obj, "request_id")
	spec, err = json.Marshal(obj)
	return spec, id, err
}

// send submits the pending lines' jobs in one call and prints every
// pending line's outcome. A call that failed as a whole ends the run:
// its lines are reported failed, and the error is returned.
func (b *batchRun) send(ctx context.Context) error {
	defer func() { b.pending, b.jobs = b.pending[:0], 0 }()
	var (
		jobs    []client.SubmitParams
		results []client.BatchResult
		callErr error
	)
	for _, l := range b.pending {
		if l.err == nil {
			jobs = append(jobs, l.job)
		}
	}
	if len(jobs) > 0 {
		results, callErr = b.c.SubmitBatch(ctx, jobs)
	}
	k := 0
	for _, l := range b.pending {
		if l.err == nil {
			l.res, l.err = results[k], results[k].Err
			k++
		}
		if err := b.print(l, callErr); err != nil {
			return err
		}
	}
	if callErr != nil {
		return fmt.Errorf("the call with lines %d to %d failed, and no later line was sent: %s", b.pending[0].n, b.pending[len(b.pending)-1].n, explain(callErr, b.e))
	}
	b.progress()
	return nil
}

// progress says how far the run has got, on a terminal, when the lines'
// outcomes go elsewhere (a file, a pipe): the next message written over it.
func (b *batchRun) progress() {
	if !b.e.errTerm.TTY || b.e.outTerm.TTY {
		return
	}
	fmt.Fprintf(b.e.errOut, "\r\033[Kspool: %s read: %d jobs submitted, %d failed", plural(b.read, "line"), b.submitted+b.repeats, b.failed)
	b.shown = true
}

// clear takes the progress line off the terminal, for another message.
func (b *batchRun) clear() {
	if b.shown {
		fmt.Fprint(b.e.errOut, "\r\033[K")
		b.shown = false
	}
}

// print says what became of a line: its job on stdout, or why it failed
// on stderr (with --json, both as a JSON object on stdout). The lines of
// a call that failed as a whole (callErr) are counted, and said once for
// all of them, except in JSON.
func (b *batchRun) print(l batchLine, callErr error) error {
	switch {
	case l.err != nil:
		b.failed++
	case l.res.Deduplicated:
		b.repeats++
	default:
		b.submitted++
	}
	if b.cfg.asJSON {
		out := struct {
			Line         int          `json:"line"`
			Job          *jobjson.Job `json:"job,omitempty"`
			Deduplicated bool         `json:"deduplicated,omitempty"`
			Error        string       `json:"error,omitempty"`
		}{Line: l.n, Deduplicated: l.res.Deduplicated}
		if l.err != nil {
			out.Error = explain(l.err, b.e)
		} else {
			v := jobjson.View(l.res.Job)
			out.Job = &v
		}
		line, err := json.Marshal(out)
		if err != nil {
			return err
		}
		_, err = fmt.Fprintf(b.e.out, "%s\n", line)
		return err
	}
	if l.err != nil && callErr != nil && errors.Is(l.err, callErr) {
		return nil
	}
	if l.err != nil {
		b.clear()
		_, err := fmt.Fprintf(b.e.errOut, "spool: line %d: %s\n", l.n, strings.TrimSpace(explain(l.err, b.e)))
		return err
	}
	note := ""
	if l.res.Deduplicated {
		note = "\tsubmitted before"
	}
	_, err := fmt.Fprintf(b.e.out, "%d\t%s%s\n", l.n, l.res.Job.ID, note)
	return err
}

// plural is n things, in words.
func plural(n int, thing string) string {
	if n == 1 {
		return "1 " + thing
	}
	return fmt.Sprintf("%d %ss", n, thing)
}
