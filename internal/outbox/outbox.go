// Package outbox keeps one job attempt's output lines, events, and finally
// its result, on the worker's disk until the server has acknowledged them,
// so a worker does not lose output while the server is away or restarting,
// nor when the worker itself is killed.
//
// An outbox is numbered segment files of framed, checksummed records,
// JOB-aATTEMPT.00000001.seg and on, in the spool directory; each segment
// starts with the header (job, attempt, task token, batching limits), so
// making an outbox costs one file, and any segment says whose it is. Lines
// are written as they are read, then the batcher's batches and the process
// events (lines.go explains how batches refer to their lines); one sender
// reads from the acknowledged position, publishes, and acknowledges;
// segments wholly acknowledged are deleted (or, made by Spares, emptied and
// kept for the next outboxes: spares.go), so the disk holds what the server
// has not yet confirmed plus at most one segment. Records are
// written without fsync: they survive the worker process dying (the page
// cache keeps them), which is what matters here, since a machine that loses
// power loses its running job too.
package outbox

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"google.golang.org/protobuf/proto"

	spoolv1 "github.com/spool-run/spool/gen/spool/v1"
	"github.com/spool-run/spool/internal/events"
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
	// Batch are the job's batching limits (see BatchLimits).
	Batch BatchLimits `json:"batch"`
	// FirstLine is the line number of the attempt's first output line (the
	// lease's next_line): batches read back carry their line numbers, so
	// the server stores them as they are sent. 0 in an outbox written
	// before workers numbered their lines: the server numbers them then.
	FirstLine int64 `json:"first_line,omitempty"`
}

// ErrBroken is returned by Next once everything readable has been read
// from an outbox whose writes failed (a full or failing disk): the rest of
// the attempt's output is lost, and the attempt must end.
var ErrBroken = errors.New("outbox: the spool directory could not be written")

// Chunk is a run of records from the acknowledged position on.
type Chunk struct {
	Events []Event
	// Result is set when the chunk reaches the final record.
	Result *spoolv1.JobResult
	// Full: the chunk stopped at the events or bytes it was allowed, and
	// more events wait behind it.
	Full bool
	end  pos
}

type pos struct {
	seg int
	off int64
}

// Outbox is one attempt's outbox. Append and Finish may be called from one
// goroutine while another calls Next and Ack.
type Outbox struct {
	// path names the outbox: segment n is path.NNNNNNNN.seg.
	path     string
	header   Header
	segBytes int64
	spares   *Spares // where removed segments go (nil: they are deleted)

	mu       sync.Mutex
	changed  chan struct{} // closed and replaced at every append
	w        *os.File      // segment being written (nil once finished)
	headed   bool          // w's header record is written
	wSeg     int
	wSize    int64
	finished bool
	sealed   bool  // no more records will come (a reopened outbox without a result)
	werr     error // sticky: a failed write fails every later one
	broken   error // the write error that broke the outbox (not Close)
	buf      []byte
	holding  int    // Holds not yet released
	held     []byte // records gathered while held
	nextLine int64  // index of the next line appended
	claimed  int64  // lines claimed by batch records appended

	acked pos // read position: everything before it is acknowledged
	rFile *os.File
	rSeg  int
	// rBuf holds segment rSeg's bytes from rBufOff on, as last read: a
	// chunk that takes only part of what was read leaves the rest for the
	// next, which does not read it again.
	rBuf    []byte
	rBufOff int64
	// Reader state: lines read that no batch record has claimed yet, the
	// sequence after the last event read, and the oldest segment still on
	// disk.
	pending pendingLines
	nextSeq int64
	lowSeg  int
}

// ErrEmpty is Open's error for an outbox that holds nothing, not even its
// header (its worker died as it was made): there is nothing to send, and
// its file is removed.
var ErrEmpty = errors.New("outbox: empty")

// Create makes a new outbox for an attempt in the directory root.
func Create(root string, h Header) (*Outbox, error) {
	return create(root, h, nil)
}

// create is Create with the spare files of spares (nil: none).
func create(root string, h Header, spares *Spares) (*Outbox, error) {
	o := &Outbox{path: filepath.Join(root, fmt.Sprintf("%s-a%d", h.JobID, h.Attempt)), header: h, segBytes: DefaultSegmentBytes,
		changed: make(chan struct{}), wSeg: 1, acked: pos{seg: 1}, lowSeg: 1, spares: spares}
	if err := o.startSegment(1); err != nil {
		return nil, err
	}
	return o, nil
}

// startSegment creates segment n as the one written. Its header record
// goes to disk with the first records written to it: making an outbox
// costs one file creation and no write of its own. A segment left empty (its
// worker died before writing to it) is nothing to send.
func (o *Outbox) startSegment(n int) error {
	if o.spares != nil {
		o.spares.take(o.segPath(n)) // O_TRUNC below empties whatever is there
	}
	f, err := os.OpenFile(o.segPath(n), os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o600)
	if err != nil {
		return fmt.Errorf("outbox: %w", err)
	}
	o.w, o.wSeg, o.wSize, o.headed = f, n, 0, false
	return nil
}

// segSuffix ends a segment's file name: .NNNNNNNN.seg; segName is what
// follows the outbox's name and its dot.
var (
	segSuffix = regexp.MustCompile(`\.([0-9]{8})\.seg$`)
	segName   = regexp.MustCompile(`^([0-9]{8})\.seg$`)
)

// List returns the outboxes in root (left by a worker that stopped before
// they were drained), as Open takes them.
func List(root string) ([]string, error) {
	entries, err := os.ReadDir(root)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("outbox: %w", err)
	}
	var paths []string
	for _, e := range entries {
		if m := segSuffix.FindStringIndex(e.Name()); !e.IsDir() && m != nil {
			paths = append(paths, filepath.Join(root, e.Name()[:m[0]]))
		}
	}
	slices.Sort(paths)
	return slices.Compact(paths), nil
}

// Open reopens an outbox left on disk (a path List returned). A record cut
// short when the worker died is dropped (it was never sent, so nothing
// acknowledged is lost).
func Open(path string) (*Outbox, error) {
	o := &Outbox{path: path, segBytes: DefaultSegmentBytes, changed: make(chan struct{})}
	segs, err := o.segments()
	if err != nil {
		return nil, err
	}
	if err := o.readHeader(segs); err != nil {
		return nil, err
	}
	if len(segs) == 0 {
		segs = []int{1}
	}
	o.acked, o.lowSeg = pos{seg: segs[0]}, segs[0]
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

// maxHeader bounds what is read to find a segment's header record: a
// header is a few hundred bytes.
const maxHeader = 64 << 10

// readHeader reads the header that starts the oldest segment. An outbox
// whose segments hold no header was never written to: it is removed.
func (o *Outbox) readHeader(segs []int) error {
	if len(segs) > 0 {
		b, err := readFile(o.segPath(segs[0]), maxHeader)
		if err != nil {
			return fmt.Errorf("outbox %s: %w", o.path, err)
		}
		kind, payload, _, err := parseRecord(b)
		if err == nil && kind == kindHeader {
			if err := json.Unmarshal(payload, &o.header); err != nil {
				return fmt.Errorf("outbox %s: header: %w", o.path, err)
			}
			return nil
		}
		if len(segs) > 1 || len(b) > 0 {
			return fmt.Errorf("outbox %s: segment %d does not start with its header", o.path, segs[0])
		}
	}
	for _, n := range segs {
		_ = os.Remove(o.segPath(n))
	}
	return fmt.Errorf("%w: %s", ErrEmpty, o.path)
}

// scanTail finds where a segment's valid records end and whether the last
// one is the result.
func scanTail(path string) (size int64, finished bool, err error) {
	b, err := readFile(path, DefaultSegmentBytes+2*(maxRecord+binary.MaxVarintLen64+5))
	if errors.Is(err, os.ErrNotExist) {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, fmt.Errorf("outbox: %w", err)
	}
	for {
		kind, _, n, err := parseRecord(b[size:])
		if err != nil {
			return size, finished, nil // the end, or a torn tail: the valid part ends here
		}
		size += int64(n)
		finished = kind == kindResult
	}
}

// readFile reads at most max bytes of the file at path: a segment holds no
// more, and whatever else a segment's name may point at is not read
// without end.
func readFile(path string, max int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(io.LimitReader(f, max))
}

func (o *Outbox) segPath(n int) string {
	return fmt.Sprintf("%s.%08d.seg", o.path, n)
}

// segments returns the numbers of the outbox's segments on disk, in order:
// the files PATH.NNNNNNNN.seg.
func (o *Outbox) segments() ([]int, error) {
	dir, prefix := filepath.Dir(o.path), filepath.Base(o.path)+"."
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("outbox: %w", err)
	}
	var segs []int
	for _, e := range entries {
		name, ok := strings.CutPrefix(e.Name(), prefix)
		if m := segName.FindStringSubmatch(name); ok && m != nil {
			n, _ := strconv.Atoi(m[1])
			segs = append(segs, n)
		}
	}
	slices.Sort(segs)
	return segs, nil
}

// Header is whose events the outbox holds.
func (o *Outbox) Header() Header { return o.header }

// Path names the outbox on disk: its segments are PATH.NNNNNNNN.seg (or,
// for an outbox a worker before this layout left, the directory PATH).
func (o *Outbox) Path() string { return o.path }

// Append adds an event.
func (o *Outbox) Append(ev *spoolv1.JobEvent) error {
	b, err := proto.Marshal(ev)
	if err != nil {
		return fmt.Errorf("outbox: encode event %d: %w", ev.GetSequence(), err)
	}
	return o.append(kindEvent, b)
}

// AppendLines adds output lines as they are read, in one write. Each must
// later be claimed, in order, by a batch (AppendBatch), or it is batched by
// the reader of the sealed outbox.
func (o *Outbox) AppendLines(lines []events.Line) error {
	o.mu.Lock()
	defer o.mu.Unlock()
	if err := o.writable(); err != nil {
		return err
	}
	o.buf = o.buf[:0]
	var payload []byte
	for i, l := range lines {
		payload = appendLinePayload(payload[:0], o.nextLine+int64(i), l)
		o.buf = appendRecord(o.buf, kindLine, payload)
	}
	if err := o.put(kindLine); err != nil {
		return err
	}
	o.nextLine += int64(len(lines))
	return nil
}

// Hold gathers the records appended from now on in memory, and Release
// writes them in one write: the lines of one read of a command's output and
// the batch records they complete cost one system call, not one each.
// Holds nest; the result (Finish) is never held, and writes what is held
// before it.
func (o *Outbox) Hold() {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.holding++
}

// Release ends a Hold, writing what it gathered once the last hold ends.
// The error is a failed write's, as an append's would have been.
func (o *Outbox) Release() error {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.holding--
	if o.holding > 0 {
		return nil
	}
	return o.writeHeld()
}

// put writes the record in o.buf, or gathers it while held. o.mu is held.
func (o *Outbox) put(kind byte) error {
	if o.holding > 0 && kind != kindResult {
		o.held = append(o.held, o.buf...)
		return nil
	}
	if err := o.writeHeld(); err != nil {
		return err
	}
	if err := o.write(o.buf); err != nil {
		return err
	}
	return o.written(kind)
}

// writeHeld writes the records gathered while held. o.mu is held.
func (o *Outbox) writeHeld() error {
	if len(o.held) == 0 {
		return nil
	}
	held := o.held
	o.held = o.held[:0]
	if err := o.writable(); err != nil {
		return err
	}
	if err := o.write(held); err != nil {
		return err
	}
	return o.written(kindLine)
}

// AppendBatch adds a batch of lines added before with AppendLines, the
// next ones no batch claimed: only its sequence and where its lines are go
// to disk. Its lines are not kept.
func (o *Outbox) AppendBatch(b events.Batch) error {
	n := int64(len(b.Lines))
	o.mu.Lock()
	defer o.mu.Unlock()
	if err := o.writable(); err != nil {
		return err
	}
	if n == 0 || o.claimed+n > o.nextLine {
		return fmt.Errorf("outbox: batch %d claims %d lines, but only %d are written and unclaimed", b.Sequence, n, o.nextLine-o.claimed)
	}
	payload, err := appendBatchPayload(nil, o.claimed, b)
	if err != nil {
		return fmt.Errorf("outbox: encode batch %d: %w", b.Sequence, err)
	}
	o.buf = appendRecord(o.buf[:0], kindBatch, payload)
	if err := o.put(kindBatch); err != nil {
		return err
	}
	o.claimed += n
	return nil
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
	if err := o.writable(); err != nil {
		return err
	}
	o.buf = appendRecord(o.buf[:0], kind, payload)
	return o.put(kind)
}

// writable says whether records may be appended. o.mu is held.
func (o *Outbox) writable() error {
	switch {
	case o.werr != nil:
		return o.werr
	case o.finished || o.w == nil:
		return errors.New("outbox: append after the result or after Close")
	}
	return nil
}

// write writes data to the segment. A failure is sticky, and wakes the
// reader so it can finish with what is readable. o.mu is held.
func (o *Outbox) write(data []byte) error {
	if !o.headed {
		hb, err := json.Marshal(o.header)
		if err != nil {
			return fmt.Errorf("outbox header: %w", err)
		}
		data = append(appendRecord(nil, kindHeader, hb), data...)
		o.headed = true
	}
	n, err := o.w.Write(data)
	o.wSize += int64(n)
	if err != nil {
		o.werr = fmt.Errorf("outbox: write %s: %w", o.w.Name(), err)
		o.broken = o.werr
		o.wake()
		return o.werr
	}
	return nil
}

func (o *Outbox) wake() {
	close(o.changed)
	o.changed = make(chan struct{})
}

// written finishes an append of a record of kind: the result closes the
// outbox for writing, a full segment starts the next. o.mu is held.
func (o *Outbox) written(kind byte) error {
	if kind == kindResult {
		o.finished = true
		o.werr = o.w.Close()
		o.w = nil
	} else if o.wSize >= o.segBytes {
		if err := o.rotate(); err != nil {
			o.werr, o.broken = err, err
			o.wake()
			return err
		}
	}
	o.wake()
	return nil
}

// rotate closes the full segment and starts the next.
func (o *Outbox) rotate() error {
	if err := o.w.Close(); err != nil {
		return fmt.Errorf("outbox: %w", err)
	}
	return o.startSegment(o.wSeg + 1)
}

// Next returns the events from the acknowledged position on: at most
// maxEvents of them and at most maxBytes (or the first alone, when it is
// larger: a publish must stay within what the server accepts), waiting
// until there is at least one. Once a sealed or broken outbox has been read
// to its end, the lines no batch claimed come out as batches. It returns
// io.EOF once the result (or, when sealed, the last record) has been
// acknowledged, ErrBroken (wrapping the write error) when the writes failed
// and everything readable has been returned, or ctx's error.
func (o *Outbox) Next(ctx context.Context, maxEvents int, maxBytes int64) (Chunk, error) {
	for {
		o.mu.Lock()
		at, wSeg, changed := o.acked, o.wSeg, o.changed
		limit := o.wSize
		ended := o.finished || o.sealed || o.broken != nil
		broken := o.broken
		o.mu.Unlock()
		o.dropReadSegments(at.seg)
		if at.seg < wSeg {
			fi, err := os.Stat(o.segPath(at.seg))
			if err != nil {
				return Chunk{}, fmt.Errorf("outbox: %w", err)
			}
			limit = fi.Size()
		}
		if at.off < limit {
			c, err := o.read(at, limit, maxEvents, maxBytes)
			if err != nil || len(c.Events) > 0 || c.Result != nil {
				return c, err
			}
			o.Ack(c) // only lines: they wait in memory for their batch
			continue
		}
		if at.seg < wSeg {
			o.mu.Lock()
			o.acked = pos{seg: at.seg + 1}
			o.mu.Unlock()
			continue
		}
		if ended {
			if tail := o.tail(maxEvents, maxBytes); len(tail) > 0 {
				return Chunk{Events: tail, end: at}, nil
			}
			if broken != nil {
				return Chunk{}, fmt.Errorf("%w: %w", ErrBroken, broken)
			}
			return Chunk{}, io.EOF
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return Chunk{}, ctx.Err()
		}
	}
}

// dropReadSegments deletes the segments before seg (wholly read and
// acknowledged) that no unclaimed line is in.
func (o *Outbox) dropReadSegments(seg int) {
	for o.lowSeg < seg && (o.pending.len() == 0 || o.pending.at[0].seg > o.lowSeg) {
		_ = o.drop(o.lowSeg)
		o.lowSeg++
	}
}

// drop deletes segment n, or keeps its file as a spare.
func (o *Outbox) drop(n int) error {
	if o.spares != nil && o.spares.keep(o.segPath(n)) {
		return nil
	}
	if err := os.Remove(o.segPath(n)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	return nil
}

// readAhead is how much of a segment one read takes in, at most (unless a
// single record is larger).
const readAhead = 1 << 20

// read parses records of segment at.seg between at.off and limit.
//
// It reads them with one system call into a buffer of their own, and the
// lines it keeps for their batches are parts of it: the buffer lives as
// long as one of them waits to be sent, and nothing is copied per record.
func (o *Outbox) read(at pos, limit int64, maxEvents int, maxBytes int64) (Chunk, error) {
	if o.rFile == nil || o.rSeg != at.seg {
		if o.rFile != nil {
			o.rFile.Close()
		}
		f, err := os.Open(o.segPath(at.seg))
		if err != nil {
			return Chunk{}, fmt.Errorf("outbox: %w", err)
		}
		o.rFile, o.rSeg, o.rBuf = f, at.seg, nil
	}
	buf, err := o.readAt(at.off, min(limit-at.off, readAhead))
	if err != nil {
		return Chunk{}, err
	}
	c := Chunk{end: at}
	var size int64
	// fits says whether an event of cost bytes joins this chunk; one that
	// does not is left for the next chunk, which reads it again from c.end.
	fits := func(cost int64) bool { return len(c.Events) == 0 || size+cost <= maxBytes }
	for len(c.Events) < maxEvents {
		rest := buf[c.end.off-at.off:]
		kind, payload, n, err := parseRecord(rest)
		if errors.Is(err, errShort) {
			switch {
			case c.end.off+int64(max(n, len(rest)+1)) > limit:
				err = errTorn // it goes on past what was written
			case c.end.off > at.off:
				return c, nil // the next read starts with it
			default:
				// A record larger than the read: read it whole.
				if buf, err = o.readAt(at.off, min(limit-at.off, int64(max(n, len(rest)+binary.MaxVarintLen64)))); err != nil {
					return Chunk{}, err
				}
				continue
			}
		}
		if err == io.EOF || (errors.Is(err, errTorn) && o.Broken()) {
			break // the end, or the record a failed write cut short
		}
		if err != nil {
			return Chunk{}, fmt.Errorf("outbox %s: segment %d at %d: %w", o.path, at.seg, c.end.off, err)
		}
		var ev Event
		switch kind {
		case kindHeader:
			c.end.off += int64(n)
			continue
		case kindResult:
			c.end.off += int64(n)
			c.Result = &spoolv1.JobResult{}
			if err := proto.Unmarshal(payload, c.Result); err != nil {
				return Chunk{}, fmt.Errorf("outbox: result: %w", err)
			}
			return c, nil
		case kindLine:
			// A line costs nothing until a batch claims it.
			index, l, err := decodeLine(payload)
			if err != nil {
				return Chunk{}, err
			}
			c.end.off += int64(n)
			// The buffer is the reader's own: keep the line in it.
			o.pending.add(l, lineAt{index: index, seg: at.seg})
			continue
		case kindBatch:
			first, marker, err := decodeBatch(payload)
			if err != nil {
				return Chunk{}, err
			}
			cost := o.claimBytes(first, marker)
			if !fits(cost) {
				c.Full = true
				return c, nil
			}
			c.end.off += int64(n)
			b, ok, err := o.claim(first, marker)
			if err != nil {
				return Chunk{}, err
			} else if !ok {
				continue
			}
			ev = BatchEvent(b)
			size += cost
		default:
			if !fits(int64(n)) {
				c.Full = true
				return c, nil
			}
			c.end.off += int64(n)
			size += int64(n)
			msg := &spoolv1.JobEvent{}
			if err := proto.Unmarshal(payload, msg); err != nil {
				return Chunk{}, fmt.Errorf("outbox: event: %w", err)
			}
			ev = MessageEvent(msg)
		}
		o.nextSeq = ev.EndSequence() + 1
		c.Events = append(c.Events, ev)
	}
	c.Full = len(c.Events) >= maxEvents
	return c, nil
}

// readAt returns n bytes of the segment being read at off: from what the
// last read left when it holds them, else read, with what it held of them
// copied rather than read again.
func (o *Outbox) readAt(off, n int64) ([]byte, error) {
	have := o.rBuf
	if off >= o.rBufOff && off <= o.rBufOff+int64(len(have)) {
		have = have[off-o.rBufOff:]
	} else {
		have = nil
	}
	if int64(len(have)) >= n {
		return have[:n], nil
	}
	buf := make([]byte, n)
	copy(buf, have)
	if _, err := o.rFile.ReadAt(buf[len(have):], off+int64(len(have))); err != nil {
		return nil, fmt.Errorf("outbox %s: segment %d at %d: %w", o.path, o.rSeg, off, err)
	}
	o.rBuf, o.rBufOff = buf, off
	return buf, nil
}

// Broken reports whether a write failed: the outbox holds less than the
// attempt printed.
func (o *Outbox) Broken() bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.broken != nil
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

// Pending is how many bytes of the outbox's files the server has not
// acknowledged yet: what the worker keeps on disk for it. Lines that no
// batch has claimed yet are acknowledged as they are read (they wait in
// memory for their batch), so they count only until then.
func (o *Outbox) Pending() int64 {
	o.mu.Lock()
	at, wSeg := o.acked, o.wSeg
	o.mu.Unlock()
	var n int64
	for seg := at.seg; seg <= wSeg; seg++ {
		fi, err := os.Stat(o.segPath(seg))
		if err != nil {
			continue // removed meanwhile: acknowledged
		}
		size := fi.Size()
		if seg == at.seg {
			size -= at.off
		}
		n += max(size, 0)
	}
	return n
}

// Close releases the outbox's files and keeps it on disk (to be reopened
// with Open by the next worker on this spool directory).
func (o *Outbox) Close() error {
	o.mu.Lock()
	defer o.mu.Unlock()
	var errs []error
	if o.w != nil && o.werr == nil {
		errs = append(errs, o.writeHeld())
	}
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
	var errs []error
	for n := o.lowSeg; n <= o.wSeg; n++ {
		errs = append(errs, o.drop(n))
	}
	return errors.Join(errs...)
}

// Keep closes the outbox and moves it into root, where it is no longer
// resumed: its output could not be delivered, and an operator may want it.
// It returns its new path.
func (o *Outbox) Keep(root string) (string, error) {
	_ = o.Close()
	if err := os.MkdirAll(root, 0o700); err != nil {
		return o.path, fmt.Errorf("outbox: %w", err)
	}
	dest := filepath.Join(root, filepath.Base(o.path))
	segs, err := o.segments()
	if err != nil {
		return o.path, err
	}
	for _, n := range segs {
		if err := os.Rename(o.segPath(n), fmt.Sprintf("%s.%08d.seg", dest, n)); err != nil {
			return o.path, fmt.Errorf("outbox: %w", err)
		}
	}
	o.path = dest
	return dest, nil
}

// Stat describes an outbox left on disk (a path List returned) without
// opening it: the bytes its files hold, and when one was last written.
func Stat(path string) (size int64, modified time.Time, err error) {
	files, err := files(path)
	if err != nil {
		return 0, time.Time{}, err
	}
	for _, f := range files {
		fi, err := os.Stat(f)
		if err != nil {
			return 0, time.Time{}, fmt.Errorf("outbox: %w", err)
		}
		size += fi.Size()
		if fi.ModTime().After(modified) {
			modified = fi.ModTime()
		}
	}
	return size, modified, nil
}

// Delete removes an outbox left on disk without opening it.
func Delete(path string) error {
	files, err := files(path)
	if err != nil {
		return err
	}
	var errs []error
	for _, f := range files {
		if err := os.Remove(f); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// files are the files of the outbox at path: its segments.
func files(path string) ([]string, error) {
	o := &Outbox{path: path}
	segs, err := o.segments()
	if err != nil {
		return nil, err
	}
	fs := make([]string, len(segs))
	for i, n := range segs {
		fs[i] = o.segPath(n)
	}
	return fs, nil
}
