package scatter

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	spoolv1 "github.com/spool-run/spool/gen/spool/v1"
	"github.com/spool-run/spool/internal/convert"
	"github.com/spool-run/spool/internal/s3items"
	"github.com/spool-run/spool/internal/store"
	"github.com/spool-run/spool/internal/store/storekit"
	"github.com/spool-run/spool/itembatch"
)

// A scatter whose spec has a source has its items read by a server, not
// sent by the client: one server at a time (the one whose claim in the
// record holds) reads the source, cuts the items into batches as they come
// (itembatch's Splitter, so the batches are the ones spool scatter would
// cut from the same file), keeps each batch in the blob store, and every
// so often records the batches so far in the scatter's record. Rounds
// release those batches meanwhile, so the first jobs run while later items
// are still being read.
//
// A reader that stops (its server restarts) leaves the batches it
// recorded; the next reader reads the source again from its start, cutting
// the same batches, and skips those recorded. Re-reading costs time, not
// memory, and works the same for every form of input, a CSV header or a
// JSON array's brackets included, and with groups whose batches close out
// of order.

// Reading bounds.
const (
	// readerLease is how long a reader's claim holds without a checkpoint:
	// after it, another server takes the reading over.
	readerLease = 30 * time.Second
	// checkpointEvery and checkpointBatches say how often a reader records
	// its batches: often enough for rounds to release them soon, seldom
	// enough that the record is not rewritten for every batch.
	checkpointEvery   = 250 * time.Millisecond
	checkpointBatches = 256
	// maxOpenBytes bounds the batches a reader holds open at once, which
	// only groups make more than one: a group that never closes holds its
	// batch until the end of the input.
	maxOpenBytes = 32 << 20
)

// BatchKey is where batch i of a scatter read from a source is kept in the
// blob store.
func BatchKey(scatterID string, i int32) string {
	return fmt.Sprintf("%sbatches/%d.json", BlobsPrefix(scatterID), i)
}

// BlobsPrefix is the prefix of every blob of a scatter.
func BlobsPrefix(scatterID string) string { return "scatters/" + scatterID + "/" }

// Reading reports whether rec's items are still being read: its batch
// count may still grow, so it cannot gather or end.
func Reading(rec *store.ScatterRecord) bool {
	r := rec.Scatter.GetReading()
	return r != nil && !r.GetDone()
}

// CheckSource checks a scatter's source: one S3 location of items, a
// known format, and batching the server can cut.
func CheckSource(src *spoolv1.ScatterSource) error {
	switch {
	case (src.GetItems() == "") == (src.GetItemsPrefix() == ""):
		return invalid("source: give exactly one of items (s3://bucket/key) and items_prefix (s3://bucket/prefix/)")
	case src.GetItems() != "":
		if _, err := s3items.Parse(src.GetItems(), false); err != nil {
			return invalid("source.items: %v", err)
		}
	default:
		if _, err := s3items.Parse(src.GetItemsPrefix(), true); err != nil {
			return invalid("source.items_prefix: %v", err)
		}
		if src.GetFormat() != "" {
			return invalid("source.format: the items of a prefix are its objects, in no format; leave it empty")
		}
	}
	switch src.GetFormat() {
	case "", "json", "jsonl", "csv":
	default:
		return invalid("source.format %q: use json (JSON Lines or an array) or csv", src.GetFormat())
	}
	if src.GetMaxBytesPerBatch() > MaxBatchBytes {
		return invalid("source.max_bytes_per_batch: %d; a batch may hold at most %d", src.GetMaxBytesPerBatch(), MaxBatchBytes)
	}
	if _, err := itembatch.NewSplitter(batching(src)); err != nil {
		return invalid("source: %v", err)
	}
	return nil
}

func batching(src *spoolv1.ScatterSource) itembatch.Config {
	return itembatch.Config{
		MaxItems: int(src.GetMaxItemsPerBatch()), MaxBytes: int(src.GetMaxBytesPerBatch()),
		GroupBy: src.GetGroupBy(), MaxItemsPerGroup: int(src.GetMaxItemsPerGroup()),
	}
}

// NewFromSource makes the record of a new scatter of a checked spec whose
// items a server reads: no batches yet.
func NewFromSource(spec *spoolv1.ScatterSpec, now time.Time) *store.ScatterRecord {
	rec := newRecord(spec, 0, 0, now)
	rec.Scatter.Reading = &spoolv1.ScatterReading{}
	return rec
}

// Batch returns the items of batch i of rec: from the blob store for a
// scatter read from a source, else from the job store.
func (d *Driver) Batch(ctx context.Context, rec *store.ScatterRecord, i int32) ([]byte, error) {
	id := rec.Scatter.GetScatterId()
	if rec.Scatter.GetSpec().GetSource() == nil {
		return d.o.Store.ScatterBatch(ctx, id, i)
	}
	if d.o.Blobs == nil {
		return nil, errors.New("this server has no blob store, where the batches of a scatter read from S3 are kept: configure blobs (docs/configuration.md)")
	}
	r, _, err := d.o.Blobs.Get(ctx, BatchKey(id, i), 0, -1)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	return io.ReadAll(io.LimitReader(r, MaxBatchBytes+1))
}

// CanRead reports why this server cannot read scatters' items from S3,
// or nil if it can.
func (d *Driver) CanRead() error {
	switch {
	case d.o.Blobs == nil:
		return errors.New("this server has no blob store to keep the batches it reads from S3 in: configure blobs (a server on AWS needs blobs.s3.bucket)")
	case d.o.S3 == nil:
		return errors.New("this server cannot read S3: configure scatter.s3")
	}
	return nil
}

// Serve lets the driver read scatters' sources in the background until
// ctx ends; wait returns once every reader has stopped.
func (d *Driver) Serve(ctx context.Context) (wait func()) {
	d.mu.Lock()
	d.base = ctx
	d.mu.Unlock()
	return func() {
		// No reader starts after this: every Add happened before the
		// Wait, as a WaitGroup wants.
		d.mu.Lock()
		d.base = nil
		d.mu.Unlock()
		d.readers.Wait()
	}
}

// startReading starts a reader of rec's source on this server, unless one
// runs here already or another server's claim holds.
func (d *Driver) startReading(rec *store.ScatterRecord) {
	sc := rec.Scatter
	if !Reading(rec) || convert.ScatterState(sc.GetState()).IsFinal() {
		return
	}
	r := sc.GetReading()
	if r.GetReader() != "" && r.GetReader() != d.self && storekit.Now().Before(r.GetReaderUntil().AsTime()) {
		return
	}
	id := sc.GetScatterId()
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.base == nil || d.base.Err() != nil || d.reading[id] {
		return
	}
	d.reading[id] = true
	d.readers.Add(1)
	go func(ctx context.Context) {
		defer d.readers.Done()
		defer func() {
			d.mu.Lock()
			delete(d.reading, id)
			d.mu.Unlock()
		}()
		if err := d.read(ctx, id); err != nil && ctx.Err() == nil {
			d.o.Log.WarnContext(ctx, "reading a scatter's items failed; a later round tries again", "scatter_id", id, "error", err)
		}
	}(d.base)
}

// feed is one reader's state.
type feed struct {
	d       *Driver
	id      string
	spec    *spoolv1.ScatterSpec
	batches int32 // cut so far, recorded or not
	items   int64 // in those batches
	read    int64 // items read
	src     s3items.Items
	etag    string // of the object read
	alone   int    // items too big for a batch, each in one of its own
	last    time.Time
	pending int
}

// read reads a scatter's source to its end, or until it is stopped.
func (d *Driver) read(ctx context.Context, id string) error {
	f := &feed{d: d, id: id}
	rec, err := f.checkpoint(ctx, false)
	if err != nil || rec == nil {
		return err
	}
	f.spec = rec.Scatter.GetSpec()
	src := f.spec.GetSource()
	recorded := rec.Scatter.GetProgress().GetBatchCount()
	if err := d.CanRead(); err != nil {
		return f.fail(ctx, err.Error())
	}
	if src.GetItems() != "" {
		loc, _ := s3items.Parse(src.GetItems(), false)
		f.src, f.etag, err = d.o.S3.Object(ctx, loc, s3items.Format(src.GetFormat(), loc.Key), rec.Scatter.GetReading().GetEtag())
		if err != nil {
			return f.fail(ctx, err.Error())
		}
	} else {
		loc, _ := s3items.Parse(src.GetItemsPrefix(), true)
		f.src = d.o.S3.Listing(ctx, loc)
	}
	defer f.src.Close()
	sp, err := itembatch.NewSplitter(batching(src))
	if err != nil {
		return f.fail(ctx, err.Error())
	}
	emit := func(bs []itembatch.Batch) error {
		for _, b := range bs {
			i := f.batches
			if i >= MaxBatches {
				return cmp.Or(f.fail(ctx, fmt.Sprintf("more than %d batches, the most a scatter may have: put more items in a batch (--max-items-per-batch, --max-bytes-per-batch)", MaxBatches)), errStop)
			}
			f.batches++
			f.items += int64(len(b.Items))
			if i < recorded {
				continue // kept by an earlier reader
			}
			if _, err := d.o.Blobs.Put(ctx, BatchKey(id, i), bytes.NewReader(b.JSON())); err != nil {
				return fmt.Errorf("keeping batch %d: %w", i, err)
			}
			f.pending++
			if f.pending >= checkpointBatches || time.Since(f.last) >= checkpointEvery {
				if rec, err := f.checkpoint(ctx, false); err != nil || rec == nil {
					return cmp.Or(err, errStop)
				}
			}
		}
		return nil
	}
	err = f.cut(ctx, sp, emit)
	if errors.Is(err, errStop) {
		return nil
	}
	return err
}

// errStop ends a reading that is no longer this server's to do (or over).
var errStop = errors.New("the reading stopped")

// cut reads every item, cutting batches and handing them to emit.
func (f *feed) cut(ctx context.Context, sp *itembatch.Splitter, emit func([]itembatch.Batch) error) error {
	src := f.spec.GetSource()
	for {
		it, err := f.src.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return f.fail(ctx, err.Error())
		}
		f.read++
		bs, ws := sp.Add(it)
		f.alone += len(ws)
		if err := emit(bs); err != nil {
			return err
		}
		if sp.OpenBytes() > maxOpenBytes {
			return f.fail(ctx, fmt.Sprintf("more than %d MiB of items wait in batches of groups still open (--group-by %s): sort the items by that field, or cut them without groups", maxOpenBytes>>20, src.GetGroupBy()))
		}
	}
	if err := emit(sp.Flush()); err != nil {
		return err
	}
	if f.batches == 0 {
		return f.fail(ctx, fmt.Sprintf("%s holds no items: there is nothing to scatter", location(src)))
	}
	if f.alone > 0 {
		// spool scatter shows these to the person; here the log has them.
		f.d.o.Log.InfoContext(ctx, "items bigger than a batch went in batches of their own", "scatter_id", f.id, "items", f.alone, "max_bytes_per_batch", cmp.Or(int(src.GetMaxBytesPerBatch()), itembatch.DefaultMaxBytes))
	}
	_, err := f.checkpoint(ctx, true)
	return err
}

func location(src *spoolv1.ScatterSource) string {
	if src.GetItems() != "" {
		return src.GetItems()
	}
	return src.GetItemsPrefix()
}

// fail stops the scatter as failed with why. Its reading stays not done:
// the items after those read are in no batch.
func (f *feed) fail(ctx context.Context, why string) error {
	err := f.update(ctx, func(rec *store.ScatterRecord) bool {
		if convert.ScatterState(rec.Scatter.GetState()).IsFinal() {
			return false
		}
		Stop(rec, spoolv1.ScatterState_SCATTER_STATE_FAILED, "reading the items: "+why)
		return true
	})
	// A round winds the scatter down now: its batches in flight are
	// cancelled.
	f.d.Kick(f.id)
	return err
}

// checkpoint records the batches cut so far (all of them when done) and
// renews the claim; the first call makes it. It returns nil and no error
// when the reading is not this server's to do, or is over.
func (f *feed) checkpoint(ctx context.Context, done bool) (*store.ScatterRecord, error) {
	var out *store.ScatterRecord
	err := f.update(ctx, func(rec *store.ScatterRecord) bool {
		sc := rec.Scatter
		r := sc.GetReading()
		if convert.ScatterState(sc.GetState()).IsFinal() {
			// Cancelled (or failed) while reading: the items not read
			// are never run.
			return false
		}
		out = rec
		p := sc.GetProgress()
		if n := f.batches; n > p.GetBatchCount() {
			p.Waiting += n - p.GetBatchCount()
			p.BatchCount, p.ItemCount = n, f.items
			rec.Ended = grow(rec.Ended, n)
			rec.Failed = grow(rec.Failed, n)
			if rec.Held != nil {
				rec.Held = grow(rec.Held, n)
			}
		}
		r.ItemsRead = max(r.GetItemsRead(), f.read)
		if f.src != nil {
			r.BytesRead = max(r.GetBytesRead(), f.src.BytesRead())
		}
		r.Done = done
		if r.GetEtag() == "" {
			r.Etag = f.etag
		}
		r.Reader, r.ReaderUntil = f.d.self, timestamppb.New(storekit.Now().Add(readerLease))
		return true
	})
	if err != nil {
		return nil, err
	}
	f.last, f.pending = time.Now(), 0
	if out != nil {
		// A round releases the batches just recorded (or, once the
		// reading is done, may gather).
		f.d.Kick(f.id)
	}
	return out, nil
}

// update changes the scatter's record with change, again on a record
// moved meanwhile, unless change says there is nothing to write. It
// changes nothing when the reading is over or another server's claim
// holds.
func (f *feed) update(ctx context.Context, change func(*store.ScatterRecord) bool) error {
	for {
		rec, err := f.d.o.Store.GetScatter(ctx, f.id)
		if err != nil {
			return err
		}
		r := rec.Scatter.GetReading()
		if r == nil || r.GetDone() {
			return nil
		}
		if r.GetReader() != "" && r.GetReader() != f.d.self && storekit.Now().Before(r.GetReaderUntil().AsTime()) {
			return nil
		}
		if !change(rec) {
			return nil
		}
		rec.Scatter.UpdatedAt = timestamppb.New(storekit.Now())
		err = f.d.o.Store.UpdateScatter(ctx, rec)
		if errors.Is(err, store.ErrScatterMoved) {
			continue
		}
		return err
	}
}

// grow makes b a set for n batches, keeping what it holds.
func grow(b store.Bits, n int32) store.Bits {
	for len(b) < int((n+7)/8) {
		b = append(b, 0)
	}
	return b
}
