package itembatch

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
)

// DefaultMaxBytes is the batch size limit when Config.MaxBytes is 0. It is
// the 256 KiB ceiling Step Functions puts on a batch, so that batches cut
// here would also be accepted there, and no job gets an input it did not
// expect to be that large.
const DefaultMaxBytes = 256 << 10

// ErrInvalidConfig is wrapped by the error Split returns for a Config that
// makes no sense. Such a Config is a bug in the caller (or a typo by the
// person), so Split refuses it rather than guessing.
var ErrInvalidConfig = errors.New("itembatch: invalid config")

// Config says how items are cut into batches. The zero value puts as many
// items in a batch as fit in DefaultMaxBytes.
//
// Unlike the other packages' Config, it has no Logger or Meters: Split
// does nothing but compute, and what it has to tell comes back as
// Warnings for the caller to show.
type Config struct {
	// MaxItems is the most items a batch holds; 0 means no limit by count.
	MaxItems int

	// MaxBytes is the most bytes a batch holds, measured as the compact
	// JSON array "[a,b,c]" that the job receives, brackets and commas
	// included. 0 means DefaultMaxBytes. It must be at least 2, the size of
	// "[]".
	MaxBytes int

	// GroupBy names a top-level field. Items whose field values differ
	// never share a batch, so that a job sees one group only (one customer,
	// one region, ...). Values are compared by their compact JSON text, so
	// 1 and 1.0 are different groups, and so are "a" and "\u0061". Items
	// that are not JSON objects, or lack the field, form one more group of
	// their own, the group of "missing" (which is not the group of null).
	// The field name must match exactly, case included.
	GroupBy string

	// MaxItemsPerGroup is the most items of one group in a batch; 0 means
	// no limit. It needs GroupBy. As a batch holds one group only, it
	// caps the batch like MaxItems does, and the smaller of the two wins;
	// it exists so that a per-group cap can be given without capping
	// batches in general.
	MaxItemsPerGroup int
}

// Batch is one batch: its items in input order. Items share memory with the
// items given to Split; neither should be changed while the other is used.
type Batch struct {
	Items []Item
}

// JSON returns the batch as a compact JSON array, the input of the job that
// runs it.
func (b Batch) JSON() []byte {
	out := make([]byte, 0, b.Size())
	out = append(out, '[')
	for i, it := range b.Items {
		if i > 0 {
			out = append(out, ',')
		}
		out = append(out, it...)
	}
	return append(out, ']')
}

// Size returns len(b.JSON()) without building it.
func (b Batch) Size() int {
	n := 2 // the brackets
	for _, it := range b.Items {
		n += len(it)
	}
	if len(b.Items) > 1 {
		n += len(b.Items) - 1 // the commas
	}
	return n
}

// Warning is something worth telling the person who asked for the batches,
// such as an item too big for any batch, that did not stop the work.
type Warning string

// Split cuts items into batches.
//
// Items keep their input order within a batch, and batches are ordered by
// the input position of their first item, so that reading the batches in
// order reads the items in order (group by group when GroupBy is set). With
// GroupBy each group is cut on its own and batches never mix groups.
//
// Batches are filled greedily: a batch closes when adding the next item
// would pass MaxItems, MaxBytes or MaxItemsPerGroup. An item whose one-item
// batch is bigger than MaxBytes cannot fit any batch; rather than fail the
// whole scatter for it, Split gives it a batch of its own, closes the batch
// before it, and returns a Warning naming it by input index and size.
//
// Split takes items as ReadItems returns them, valid compact JSON; it does
// not check them again. No items give no batches and no error. An invalid
// Config (negative numbers, MaxItemsPerGroup without GroupBy, MaxBytes
// below 2) gives an error wrapping ErrInvalidConfig.
func Split(items []Item, o Config) ([]Batch, []Warning, error) {
	sp, err := NewSplitter(o)
	if err != nil {
		return nil, nil, err
	}
	var (
		batches  []firstBatch
		warnings []Warning
	)
	for _, it := range items {
		done, ws := sp.add(it)
		batches = append(batches, done...)
		warnings = append(warnings, ws...)
	}
	batches = append(batches, sp.flush()...)
	// A batch closes when its group's next item does not fit, which with
	// GroupBy may come after later groups' batches opened: order them by
	// their first items, as promised. Without GroupBy they already are.
	slices.SortStableFunc(batches, func(a, b firstBatch) int { return cmp.Compare(a.first, b.first) })
	return plain(batches), warnings, nil
}

// Splitter cuts items into batches as they come, by the rules of [Split],
// for inputs too large to hold: it keeps only the batches still being
// filled (one per group), and hands each batch out as soon as it is
// closed.
//
// Without GroupBy, the batches come out in the order Split gives them.
// With GroupBy a batch comes out when it closes, which may be after
// batches of other groups that started later; [Flush] gives the batches
// still open in the order of their first items. The batches themselves
// are the ones Split makes.
type Splitter struct {
	o     Config
	items int // seen so far
	// open holds the batch still being filled for each group, by the
	// group's key. Without GroupBy every item has the key "".
	open map[string]*openBatch
	// openBytes is the sum of the open batches' sizes.
	openBytes int
}

// NewSplitter returns a Splitter cutting by o, or an error wrapping
// ErrInvalidConfig, as Split's.
func NewSplitter(o Config) (*Splitter, error) {
	o, err := o.normalize()
	if err != nil {
		return nil, err
	}
	return &Splitter{o: o, open: map[string]*openBatch{}}, nil
}

// Add takes the next item, valid compact JSON (as an ItemReader gives it),
// and returns the batches it closed, if any, and a Warning for an item too
// big for any batch.
func (s *Splitter) Add(it Item) ([]Batch, []Warning) {
	done, ws := s.add(it)
	return plain(done), ws
}

// Flush returns the batches still open, in the order of their first items,
// and empties the Splitter.
func (s *Splitter) Flush() []Batch { return plain(s.flush()) }

// OpenBytes returns the size of the batches still open: the memory the
// Splitter holds, a caller's measure of whether too many groups are open
// at once.
func (s *Splitter) OpenBytes() int { return s.openBytes }

// firstBatch is a batch with the input index of its first item.
type firstBatch struct {
	Batch
	first int
}

func plain(bs []firstBatch) []Batch {
	if len(bs) == 0 {
		return nil
	}
	out := make([]Batch, len(bs))
	for i, b := range bs {
		out[i] = b.Batch
	}
	return out
}

func (s *Splitter) add(it Item) ([]firstBatch, []Warning) {
	i := s.items
	s.items++
	var key string
	if s.o.GroupBy != "" {
		key = groupKey(it, s.o.GroupBy)
	}
	var (
		done     []firstBatch
		warnings []Warning
	)
	ob := s.open[key]
	alone := len(it)+2 > s.o.MaxBytes
	if ob != nil && (alone || !ob.fits(it, s.o)) {
		done = append(done, s.close(key, ob))
		ob = nil
	}
	if alone {
		done = append(done, firstBatch{Batch{Items: []Item{it}}, i})
		warnings = append(warnings, Warning(fmt.Sprintf(
			"item %d is %d bytes, %d bytes as a batch of its own, over the %d-byte batch limit; it goes in a batch alone",
			i, len(it), len(it)+2, s.o.MaxBytes)))
		return done, warnings
	}
	if ob == nil {
		ob = &openBatch{first: i, size: 2}
		s.open[key] = ob
		s.openBytes += 2
	}
	if len(ob.items) > 0 {
		ob.size++ // the comma
		s.openBytes++
	}
	ob.size += len(it)
	s.openBytes += len(it)
	ob.items = append(ob.items, it)
	return done, warnings
}

func (s *Splitter) close(key string, ob *openBatch) firstBatch {
	delete(s.open, key)
	s.openBytes -= ob.size
	return firstBatch{Batch{Items: ob.items}, ob.first}
}

func (s *Splitter) flush() []firstBatch {
	out := make([]firstBatch, 0, len(s.open))
	for key, ob := range s.open {
		out = append(out, s.close(key, ob))
	}
	slices.SortFunc(out, func(a, b firstBatch) int { return cmp.Compare(a.first, b.first) })
	return out
}

// openBatch is a batch still being filled.
type openBatch struct {
	first int // input index of its first item
	items []Item
	size  int // Batch.Size, kept up to date
}

// fits reports whether it can join the batch without passing a limit.
func (ob *openBatch) fits(it Item, o Config) bool {
	n := len(ob.items)
	if o.MaxItems > 0 && n+1 > o.MaxItems {
		return false
	}
	if o.MaxItemsPerGroup > 0 && n+1 > o.MaxItemsPerGroup {
		return false
	}
	return ob.size+1+len(it) <= o.MaxBytes // +1 for the comma: the batch is never empty
}

// normalize checks o and fills in the defaults.
func (o Config) normalize() (Config, error) {
	switch {
	case o.MaxItems < 0:
		return o, fmt.Errorf("%w: MaxItems is %d; it must be 0 (no limit) or more", ErrInvalidConfig, o.MaxItems)
	case o.MaxBytes < 0 || o.MaxBytes == 1:
		return o, fmt.Errorf("%w: MaxBytes is %d; it must be 0 (the default, %s) or at least 2, the size of []",
			ErrInvalidConfig, o.MaxBytes, byteCount(DefaultMaxBytes))
	case o.MaxItemsPerGroup < 0:
		return o, fmt.Errorf("%w: MaxItemsPerGroup is %d; it must be 0 (no limit) or more", ErrInvalidConfig, o.MaxItemsPerGroup)
	case o.MaxItemsPerGroup > 0 && o.GroupBy == "":
		return o, fmt.Errorf("%w: MaxItemsPerGroup is set but GroupBy is not", ErrInvalidConfig)
	}
	if o.MaxBytes == 0 {
		o.MaxBytes = DefaultMaxBytes
	}
	return o, nil
}

// groupKey returns the compact JSON text of the top-level field named field
// in it, or "" for the group of "missing". No JSON value is empty text, so "" cannot be
// mistaken for a real value.
func groupKey(it Item, field string) string {
	var obj map[string]json.RawMessage
	// null decodes into a nil map without error; it is not an object.
	if err := json.Unmarshal(it, &obj); err != nil || obj == nil {
		return ""
	}
	v, ok := obj[field]
	if !ok {
		return ""
	}
	var b bytes.Buffer
	if err := json.Compact(&b, v); err != nil {
		return "" // cannot happen: Unmarshal checked it
	}
	return b.String()
}
