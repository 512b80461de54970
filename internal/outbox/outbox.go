// Package outbox keeps one job attempt's events, and finally its result, on
// the worker's disk until the server has acknowledged them (DESIGN
// principle 7: the worker does not lose output when the server is away).
//
// An outbox is a directory: header.json (job, attempt, task token) and
// numbered segment files of framed, checksummed records. The batcher
// appends; one sender reads from the acknowledged position, publishes, and
// acknowledges; segments wholly acknowledged are deleted, so the disk holds
// what the server has not yet confirmed plus at most one segment. Records
// are written without fsync: they survive the worker process dying (the
// page cache keeps them), which is what matters here, since a machine that
// loses power loses its running job too.
package outbox

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"google.golang.org/protobuf/proto"

	spoolv1 "github.com/spool-run/spool/gen/spool/v1"
)

// DefaultSegmentBytes is when a segment is closed and the next started.
const DefaultSegmentBytes = 8 << 20

// Header says whose events an outbox holds.
type Header struct {
	JobID   string    `json:"job_id"`
	Queue   string    `json:"queue"`
	Attempt int32     `json:"attempt"`
	Token   string    `json:"task_token"`
	Server  string    `json:"server"`
	Created time.Time `json:"created"`
}

// Chunk is a run of records from the acknowledged position on.
type Chunk struct {
	Events []*spoolv1.JobEvent
	// Result is set when the chunk reaches the final record.
	Result *spoolv1.JobResult
	end    pos
}

type pos struct {
	seg int
	off int64
}

// Outbox is one attempt's outbox. Append and Finish may be called from one
// goroutine while another calls Next and Ack.
type Outbox struct {
	dir      string
	header   Header
	segBytes int64

	mu       sync.Mutex
	changed  chan struct{} // closed and replaced at every append
	w        *os.File      // segment being written (nil once finished)
	wSeg     int
	wSize    int64
	finished bool
	sealed   bool  // no more records will come (a reopened outbox without a result)
	werr     error // sticky: a failed write fails every later one
	buf      []byte

	acked pos // read position: everything before it is acknowledged
	rFile *os.File
	rSeg  int
}

// Create makes a new outbox for an attempt under root.
func Create(root string, h Header) (*Outbox, error) {
	dir := filepath.Join(root, fmt.Sprintf("%s-a%d", h.JobID, h.Attempt))
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("outbox: %w", err)
	}
	if err := writeHeader(dir, h); err != nil {
		return nil, err
	}
	o := &Outbox{dir: dir, header: h, segBytes: DefaultSegmentBytes, changed: make(chan struct{}), wSeg: 1, acked: pos{seg: 1}}
	f, err := os.OpenFile(o.segPath(1), os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o600)
	if err != nil {
		return nil, fmt.Errorf("outbox: %w", err)
	}
	o.w = f
	return o, nil
}

func writeHeader(dir string, h Header) error {
	b, err := json.MarshalIndent(h, "", "  ")
	if err != nil {
		return fmt.Errorf("outbox header: %w", err)
	}
	tmp := filepath.Join(dir, "header.json.tmp")
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		return fmt.Errorf("outbox header: %w", err)
	}
	if err := os.Rename(tmp, filepath.Join(dir, "header.json")); err != nil {
		return fmt.Errorf("outbox header: %w", err)
	}
	return nil
}

// List returns the outbox directories under root (left by a worker that
// stopped before its outboxes were drained).
func List(root string) ([]string, error) {
	entries, err := os.ReadDir(root)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("outbox: %w", err)
	}
	var dirs []string
	for _, e := range entries {
		if e.IsDir() {
			if _, err := os.Stat(filepath.Join(root, e.Name(), "header.json")); err == nil {
				dirs = append(dirs, filepath.Join(root, e.Name()))
			}
		}
	}
	return dirs, nil
}

// Open reopens an outbox left on disk. A record cut short when the worker
// died is dropped (it was never sent, so nothing acknowledged is lost).
func Open(dir string) (*Outbox, error) {
	b, err := os.ReadFile(filepath.Join(dir, "header.json"))
	if err != nil {
		return nil, fmt.Errorf("outbox %s: %w", dir, err)
	}
	o := &Outbox{dir: dir, segBytes: DefaultSegmentBytes, changed: make(chan struct{})}
	if err := json.Unmarshal(b, &o.header); err != nil {
		return nil, fmt.Errorf("outbox %s: header: %w", dir, err)
	}
	segs, err := o.segments()
	if err != nil {
		return nil, err
	}
	if len(segs) == 0 {
		segs = []int{1}
	}
	o.acked = pos{seg: segs[0]}
	o.wSeg = segs[len(segs)-1]
	size, finished, err := scanTail(o.segPath(o.wSeg))
	if err != nil {
		return nil, err
	}
	o.wSize, o.finished = size, finished
	if !finished {
		f, err := os.OpenFile(o.segPath(o.wSeg), os.O_CREATE|os.O_WRONLY, 0o600)
		if err != nil {
			return nil, fmt.Errorf("outbox: %w", err)
		}
		if err := f.Truncate(size); err != nil {
			f.Close()
			return nil, fmt.Errorf("outbox: drop torn record: %w", err)
		}
		if _, err := f.Seek(size, io.SeekStart); err != nil {
			f.Close()
			return nil, fmt.Errorf("outbox: %w", err)
		}
		o.w = f
	}
	return o, nil
}

// scanTail finds where a segment's valid records end and whether the last
// one is the result.
func scanTail(path string) (size int64, finished bool, err error) {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, fmt.Errorf("outbox: %w", err)
	}
	defer f.Close()
	r := bufio.NewReader(f)
	for {
		kind, _, n, err := readRecord(r)
		if err != nil {
			return size, finished, nil // EOF or a torn tail: the valid part ends here
		}
		size += int64(n)
		finished = kind == kindResult
	}
}

func (o *Outbox) segPath(n int) string { return filepath.Join(o.dir, fmt.Sprintf("%08d.seg", n)) }

func (o *Outbox) segments() ([]int, error) {
	entries, err := os.ReadDir(o.dir)
	if err != nil {
		return nil, fmt.Errorf("outbox: %w", err)
	}
	var segs []int
	for _, e := range entries {
		if n, err := strconv.Atoi(strings.TrimSuffix(e.Name(), ".seg")); err == nil && strings.HasSuffix(e.Name(), ".seg") {
			segs = append(segs, n)
		}
	}
	slices.Sort(segs)
	return segs, nil
}

// Header is whose events the outbox holds.
func (o *Outbox) Header() Header { return o.header }

// Dir is the outbox's directory.
func (o *Outbox) Dir() string { return o.dir }

// Append adds an event.
func (o *Outbox) Append(ev *spoolv1.JobEvent) error {
	b, err := proto.Marshal(ev)
	if err != nil {
		return fmt.Errorf("outbox: encode event %d: %w", ev.GetSequence(), err)
	}
	return o.append(kindEvent, b)
}

// Finish adds the attempt's result; nothing may be appended after it.
func (o *Outbox) Finish(res *spoolv1.JobResult) error {
	b, err := proto.Marshal(res)
	if err != nil {
		return fmt.Errorf("outbox: encode result: %w", err)
	}
	return o.append(kindResult, b)
}

func (o *Outbox) append(kind byte, payload []byte) error {
	o.mu.Lock()
	defer o.mu.Unlock()
	switch {
	case o.werr != nil:
		return o.werr
	case o.finished || o.w == nil:
		return errors.New("outbox: append after the result or after Close")
	}
	o.buf = appendRecord(o.buf[:0], kind, payload)
	if _, err := o.w.Write(o.buf); err != nil {
		o.werr = fmt.Errorf("outbox: write %s: %w", o.w.Name(), err)
		return o.werr
	}
	o.wSize += int64(len(o.buf))
	if kind == kindResult {
		o.finished = true
		o.werr = o.w.Close()
		o.w = nil
	} else if o.wSize >= o.segBytes {
		if err := o.rotate(); err != nil {
			o.werr = err
			return err
		}
	}
	close(o.changed)
	o.changed = make(chan struct{})
	return nil
}

// rotate closes the full segment and starts the next.
func (o *Outbox) rotate() error {
	if err := o.w.Close(); err != nil {
		return fmt.Errorf("outbox: %w", err)
	}
	f, err := os.OpenFile(o.segPath(o.wSeg+1), os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o600)
	if err != nil {
		return fmt.Errorf("outbox: %w", err)
	}
	o.w, o.wSeg, o.wSize = f, o.wSeg+1, 0
	return nil
}

// Next returns the records from the acknowledged position on: at most
// maxEvents events and about maxBytes of them, waiting until there is at
// least one. It returns io.EOF once the result (or, when sealed, the last
// record) has been acknowledged, or ctx's error.
func (o *Outbox) Next(ctx context.Context, maxEvents int, maxBytes int64) (Chunk, error) {
	for {
		o.mu.Lock()
		at, wSeg, changed := o.acked, o.wSeg, o.changed
		limit := o.wSize
		done := (o.finished || o.sealed) && at.seg == wSeg && at.off >= limit
		o.mu.Unlock()
		if done {
			return Chunk{}, io.EOF
		}
		if at.seg < wSeg {
			fi, err := os.Stat(o.segPath(at.seg))
			if err != nil {
				return Chunk{}, fmt.Errorf("outbox: %w", err)
			}
			limit = fi.Size()
		}
		if at.off < limit {
			return o.read(at, limit, maxEvents, maxBytes)
		}
		if at.seg < wSeg {
			o.mu.Lock()
			o.acked = pos{seg: at.seg + 1}
			o.mu.Unlock()
			_ = os.Remove(o.segPath(at.seg))
			continue
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return Chunk{}, ctx.Err()
		}
	}
}

// read parses records of segment at.seg between at.off and limit.
func (o *Outbox) read(at pos, limit int64, maxEvents int, maxBytes int64) (Chunk, error) {
	if o.rFile == nil || o.rSeg != at.seg {
		if o.rFile != nil {
			o.rFile.Close()
		}
		f, err := os.Open(o.segPath(at.seg))
		if err != nil {
			return Chunk{}, fmt.Errorf("outbox: %w", err)
		}
		o.rFile, o.rSeg = f, at.seg
	}
	r := bufio.NewReaderSize(io.NewSectionReader(o.rFile, at.off, limit-at.off), 64<<10)
	c := Chunk{end: at}
	var size int64
	for len(c.Events) < maxEvents && (size < maxBytes || len(c.Events) == 0) {
		kind, payload, n, err := readRecord(r)
		if err == io.EOF {
			break
		}
		if err != nil {
			return Chunk{}, fmt.Errorf("outbox %s: segment %d at %d: %w", o.dir, at.seg, c.end.off, err)
		}
		c.end.off += int64(n)
		size += int64(n)
		if kind == kindResult {
			c.Result = &spoolv1.JobResult{}
			if err := proto.Unmarshal(payload, c.Result); err != nil {
				return Chunk{}, fmt.Errorf("outbox: result: %w", err)
			}
			break
		}
		ev := &spoolv1.JobEvent{}
		if err := proto.Unmarshal(payload, ev); err != nil {
			return Chunk{}, fmt.Errorf("outbox: event: %w", err)
		}
		c.Events = append(c.Events, ev)
	}
	return c, nil
}

// Finished reports whether the result has been written.
func (o *Outbox) Finished() bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.finished
}

// Seal says nothing more will be appended (the attempt that wrote a
// reopened outbox is gone): Next returns io.EOF after the last record
// instead of waiting.
func (o *Outbox) Seal() {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.sealed = true
	close(o.changed)
	o.changed = make(chan struct{})
}

// Ack records that the chunk's records are with the server.
func (o *Outbox) Ack(c Chunk) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if c.end.seg > o.acked.seg || (c.end.seg == o.acked.seg && c.end.off > o.acked.off) {
		o.acked = c.end
	}
}

// Close releases the outbox's files and keeps it on disk (to be reopened
// with Open by the next worker on this spool directory).
func (o *Outbox) Close() error {
	o.mu.Lock()
	defer o.mu.Unlock()
	var errs []error
	if o.w != nil {
		errs = append(errs, o.w.Close())
		o.w = nil
	}
	if o.rFile != nil {
		errs = append(errs, o.rFile.Close())
		o.rFile = nil
	}
	if o.werr == nil {
		o.werr = errors.New("outbox: closed")
	}
	return errors.Join(errs...)
}

// Remove closes the outbox and deletes it: everything was acknowledged, or
// the lease is gone and the server will never take it.
func (o *Outbox) Remove() error {
	_ = o.Close()
	return os.RemoveAll(o.dir)
}
