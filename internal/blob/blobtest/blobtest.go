// Package blobtest is the suite every blob.Store passes: a backend's test
// calls Run with a function that opens a fresh, empty store.
package blobtest

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/spool-run/spool/internal/blob"
)

// Open returns a fresh, empty store for t, closed when t ends.
type Open func(t *testing.T) blob.Store

// LargeSize is the blob the memory test streams through a store, and
// LargeGrowth the most the heap may grow meanwhile.
const (
	LargeSize   = 200 << 20
	LargeGrowth = 64 << 20
)

// Run runs the suite against the stores open makes.
func Run(t *testing.T, open Open) {
	tests := []struct {
		name string
		fn   func(*testing.T, blob.Store)
	}{
		{"RoundTrip", testRoundTrip},
		{"Empty", testEmpty},
		{"Replace", testReplace},
		{"Ranges", testRanges},
		{"InvalidKeys", testInvalidKeys},
		{"NotFound", testNotFound},
		{"List", testList},
		{"Delete", testDelete},
		{"DeletePrefix", testDeletePrefix},
		{"FailedPut", testFailedPut},
		{"CancelledPut", testCancelledPut},
		{"ConcurrentPuts", testConcurrentPuts},
		{"Large", testLarge},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) { tc.fn(t, open(t)) })
	}
}

func ctx(t *testing.T) context.Context { return t.Context() }

func sum(b []byte) string {
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:])
}

// data is n bytes that do not compress, the same for the same seed.
func data(seed uint64, n int) []byte {
	b := make([]byte, n)
	_, _ = rand.NewChaCha8(seedOf(seed)).Read(b)
	return b
}

func seedOf(n uint64) (s [32]byte) {
	for i := range 8 {
		s[i] = byte(n >> (8 * i))
	}
	return s
}

func put(t *testing.T, s blob.Store, key string, b []byte) blob.Info {
	t.Helper()
	before := time.Now()
	info, err := s.Put(ctx(t), key, bytes.NewReader(b))
	if err != nil {
		t.Fatalf("Put(%q): %v", key, err)
	}
	checkInfo(t, info, key, b)
	// Some stores keep whole seconds.
	if info.Modified.Before(before.Add(-2*time.Second)) || info.Modified.After(time.Now().Add(2*time.Second)) {
		t.Errorf("Put(%q) Modified = %v, want about %v", key, info.Modified, before)
	}
	return info
}

func checkInfo(t *testing.T, info blob.Info, key string, b []byte) {
	t.Helper()
	if info.Key != key || info.Size != int64(len(b)) || info.SHA256 != sum(b) {
		t.Errorf("info = %+v, want key %q, size %d, sha256 %s", info, key, len(b), sum(b))
	}
}

func get(t *testing.T, s blob.Store, key string, offset, length int64) ([]byte, blob.Info) {
	t.Helper()
	rc, info, err := s.Get(ctx(t), key, offset, length)
	if err != nil {
		t.Fatalf("Get(%q, %d, %d): %v", key, offset, length, err)
	}
	defer rc.Close()
	b, err := io.ReadAll(rc)
	if err != nil {
		t.Fatalf("reading Get(%q, %d, %d): %v", key, offset, length, err)
	}
	return b, info
}

func testRoundTrip(t *testing.T, s blob.Store) {
	b := data(1, 300_000)
	want := put(t, s, "job-1/out.bin", b)
	got, info := get(t, s, "job-1/out.bin", 0, -1)
	if !bytes.Equal(got, b) {
		t.Fatalf("Get returned %d bytes that differ from the %d put", len(got), len(b))
	}
	checkInfo(t, info, "job-1/out.bin", b)
	st, err := s.Stat(ctx(t), "job-1/out.bin")
	if err != nil {
		t.Fatal(err)
	}
	checkInfo(t, st, "job-1/out.bin", b)
	if !st.Modified.Equal(want.Modified) && st.Modified.Sub(want.Modified).Abs() > time.Second {
		t.Errorf("Stat Modified = %v, Put said %v", st.Modified, want.Modified)
	}
}

func testEmpty(t *testing.T, s blob.Store) {
	put(t, s, "empty", nil)
	got, info := get(t, s, "empty", 0, -1)
	if len(got) != 0 {
		t.Fatalf("Get of an empty blob gave %d bytes", len(got))
	}
	checkInfo(t, info, "empty", nil)
}

func testReplace(t *testing.T, s blob.Store) {
	put(t, s, "k", data(1, 5000))
	b := data(2, 1234)
	put(t, s, "k", b)
	got, info := get(t, s, "k", 0, -1)
	if !bytes.Equal(got, b) {
		t.Fatal("Get after a second Put does not give the second blob")
	}
	checkInfo(t, info, "k", b)
	n := 0
	for _, err := range s.List(ctx(t), "") {
		if err != nil {
			t.Fatal(err)
		}
		n++
	}
	if n != 1 {
		t.Errorf("List after replacing a blob shows %d blobs, want 1", n)
	}
}

func testRanges(t *testing.T, s blob.Store) {
	b := data(3, 1000)
	put(t, s, "r", b)
	for _, c := range []struct{ off, n, from, to int64 }{
		{0, -1, 0, 1000},
		{10, 20, 10, 30},
		{0, 1, 0, 1},
		{999, -1, 999, 1000},
		{990, 100, 990, 1000}, // past the end: cut
		{1000, 10, 1000, 1000},
		{5000, -1, 1000, 1000},
		{0, 0, 0, 0},
		{500, 0, 500, 500},
	} {
		got, info := get(t, s, "r", c.off, c.n)
		if !bytes.Equal(got, b[c.from:c.to]) {
			t.Errorf("Get(%d, %d) gave %d bytes, want bytes %d to %d", c.off, c.n, len(got), c.from, c.to)
		}
		checkInfo(t, info, "r", b)
	}
	if _, _, err := s.Get(ctx(t), "r", -1, 10); !errors.Is(err, blob.ErrInvalidRange) {
		t.Errorf("Get at offset -1: err = %v, want ErrInvalidRange", err)
	}
}

// BadKeys are keys every store refuses.
var BadKeys = []string{
	"", "/etc/passwd", "..", "../x", "a/../../x", "a/./b", "a//b", "a/", ".",
	"a\\b", "a\nb", "a\x00b", strings.Repeat("x", blob.MaxKeyBytes+1), "\xff",
	strings.Repeat("s", blob.MaxSegmentBytes+1),
}

func testInvalidKeys(t *testing.T, s blob.Store) {
	for _, k := range BadKeys {
		if _, err := s.Put(ctx(t), k, strings.NewReader("x")); !errors.Is(err, blob.ErrInvalidKey) {
			t.Errorf("Put(%q): err = %v, want ErrInvalidKey", k, err)
		}
		if _, _, err := s.Get(ctx(t), k, 0, -1); !errors.Is(err, blob.ErrInvalidKey) {
			t.Errorf("Get(%q): err = %v, want ErrInvalidKey", k, err)
		}
		if _, err := s.Stat(ctx(t), k); !errors.Is(err, blob.ErrInvalidKey) {
			t.Errorf("Stat(%q): err = %v, want ErrInvalidKey", k, err)
		}
		if err := s.Delete(ctx(t), k); !errors.Is(err, blob.ErrInvalidKey) {
			t.Errorf("Delete(%q): err = %v, want ErrInvalidKey", k, err)
		}
	}
	for _, p := range []string{"/x", "../", "a//"} {
		for _, err := range s.List(ctx(t), p) {
			if !errors.Is(err, blob.ErrInvalidKey) {
				t.Errorf("List(%q): err = %v, want ErrInvalidKey", p, err)
			}
		}
	}
	if _, err := s.DeletePrefix(ctx(t), ""); !errors.Is(err, blob.ErrInvalidKey) {
		t.Errorf(`DeletePrefix(""): err = %v, want ErrInvalidKey`, err)
	}
	long := strings.Repeat(strings.Repeat("x", blob.MaxSegmentBytes-1)+"/", 2)
	long += strings.Repeat("y", blob.MaxKeyBytes-len(long))
	put(t, s, long, []byte("longest"))
	put(t, s, "ünïcode/ключ with spaces", []byte("x"))
}

func testNotFound(t *testing.T, s blob.Store) {
	put(t, s, "a/b", []byte("x"))
	for _, k := range []string{"nope", "a", "a/b/c", "a/bb"} {
		if _, _, err := s.Get(ctx(t), k, 0, -1); !errors.Is(err, blob.ErrNotFound) {
			t.Errorf("Get(%q): err = %v, want ErrNotFound", k, err)
		}
		if _, err := s.Stat(ctx(t), k); !errors.Is(err, blob.ErrNotFound) {
			t.Errorf("Stat(%q): err = %v, want ErrNotFound", k, err)
		}
	}
}

// list returns the infos List yields.
func list(t *testing.T, s blob.Store, prefix string) []blob.Info {
	t.Helper()
	var out []blob.Info
	for info, err := range s.List(ctx(t), prefix) {
		if err != nil {
			t.Fatalf("List(%q): %v", prefix, err)
		}
		out = append(out, info)
	}
	return out
}

func keysOf(infos []blob.Info) []string {
	keys := make([]string, len(infos))
	for i, in := range infos {
		keys[i] = in.Key
	}
	return keys
}

func testList(t *testing.T, s blob.Store) {
	keys := []string{"b/x/y", "a/c", "ab", "a", "a-b", "a/b", "a/b/c", "b/x.d/z", "b/x.b"}
	contents := map[string][]byte{}
	for i, k := range keys {
		contents[k] = data(uint64(10+i), 100*(i+1))
		put(t, s, k, contents[k])
	}
	all := list(t, s, "")
	sorted := slices.Clone(keys)
	slices.Sort(sorted)
	if got := keysOf(all); !slices.Equal(got, sorted) {
		t.Fatalf("List(\"\") = %q, want %q", got, sorted)
	}
	for _, in := range all {
		b := contents[in.Key]
		if in.Size != int64(len(b)) {
			t.Errorf("List: %q has size %d, want %d", in.Key, in.Size, len(b))
		}
		// A listing may leave the checksum out, but never gives a wrong one.
		if in.SHA256 != "" && in.SHA256 != sum(b) {
			t.Errorf("List: %q has sha256 %s, want %s", in.Key, in.SHA256, sum(b))
		}
		if in.Modified.IsZero() {
			t.Errorf("List: %q has no modification time", in.Key)
		}
	}
	for prefix, want := range map[string][]string{
		"a/":    {"a/b", "a/b/c", "a/c"},
		"a":     {"a", "a-b", "a/b", "a/b/c", "a/c", "ab"},
		"a/b":   {"a/b", "a/b/c"},
		"a/b/":  {"a/b/c"},
		"b/x":   {"b/x.b", "b/x.d/z", "b/x/y"},
		"b/x.d": {"b/x.d/z"},
		"zz":    nil,
		"zz/":   nil,
	} {
		if got := keysOf(list(t, s, prefix)); !slices.Equal(got, want) {
			t.Errorf("List(%q) = %q, want %q", prefix, got, want)
		}
	}
	// Stopping early is allowed.
	for range s.List(ctx(t), "") {
		break
	}
}

func testDelete(t *testing.T, s blob.Store) {
	put(t, s, "j/1", []byte("one"))
	put(t, s, "j/2", []byte("two"))
	if err := s.Delete(ctx(t), "j/1"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Stat(ctx(t), "j/1"); !errors.Is(err, blob.ErrNotFound) {
		t.Errorf("Stat after Delete: err = %v, want ErrNotFound", err)
	}
	if err := s.Delete(ctx(t), "j/1"); err != nil {
		t.Errorf("deleting a deleted blob: %v", err)
	}
	if err := s.Delete(ctx(t), "never/was"); err != nil {
		t.Errorf("deleting a blob that never was: %v", err)
	}
	if got := keysOf(list(t, s, "")); !slices.Equal(got, []string{"j/2"}) {
		t.Errorf("List after Delete = %q", got)
	}
	// The key can be used again.
	put(t, s, "j/1", []byte("again"))
}

func testDeletePrefix(t *testing.T, s blob.Store) {
	for _, k := range []string{"job-1/a", "job-1/b/c", "job-10/a", "job-2/a"} {
		put(t, s, k, []byte(k))
	}
	n, err := s.DeletePrefix(ctx(t), "job-1/")
	if err != nil || n != 2 {
		t.Fatalf("DeletePrefix(job-1/) = %d, %v; want 2", n, err)
	}
	if got := keysOf(list(t, s, "")); !slices.Equal(got, []string{"job-10/a", "job-2/a"}) {
		t.Errorf("List after DeletePrefix = %q", got)
	}
	if n, err := s.DeletePrefix(ctx(t), "job-1/"); err != nil || n != 0 {
		t.Errorf("DeletePrefix again = %d, %v; want 0", n, err)
	}
	if n, err := s.DeletePrefix(ctx(t), "job-"); err != nil || n != 2 {
		t.Errorf("DeletePrefix(job-) = %d, %v; want 2", n, err)
	}
	if got := list(t, s, ""); len(got) != 0 {
		t.Errorf("List after deleting everything = %q", keysOf(got))
	}
}

var errBroken = errors.New("the input broke")

// failing yields n bytes, then fails.
type failing struct {
	r   io.Reader
	err error
}

func (f *failing) Read(p []byte) (int, error) {
	n, err := f.r.Read(p)
	if err == io.EOF {
		return n, f.err
	}
	return n, err
}

// checkAbsent checks key is neither readable nor listed.
func checkAbsent(t *testing.T, s blob.Store, key string) {
	t.Helper()
	if _, err := s.Stat(ctx(t), key); !errors.Is(err, blob.ErrNotFound) {
		t.Errorf("Stat(%q) after a failed Put: err = %v, want ErrNotFound", key, err)
	}
	if _, _, err := s.Get(ctx(t), key, 0, -1); !errors.Is(err, blob.ErrNotFound) {
		t.Errorf("Get(%q) after a failed Put: err = %v, want ErrNotFound", key, err)
	}
	if got := list(t, s, ""); slices.ContainsFunc(got, func(in blob.Info) bool { return in.Key == key }) {
		t.Errorf("List after a failed Put of %q shows it: %q", key, keysOf(got))
	}
}

func testFailedPut(t *testing.T, s blob.Store) {
	// Small and large (past any backend's part or chunk size).
	for _, n := range []int{1000, 20 << 20} {
		key := fmt.Sprintf("failed/%d", n)
		_, err := s.Put(ctx(t), key, &failing{r: bytes.NewReader(data(4, n)), err: errBroken})
		if !errors.Is(err, errBroken) {
			t.Fatalf("Put of a failing input: err = %v, want the input's error", err)
		}
		checkAbsent(t, s, key)
	}
	if got := list(t, s, ""); len(got) != 0 {
		t.Errorf("List after failed Puts = %q", keysOf(got))
	}
	// A failed Put over a blob leaves the blob as it was.
	old := data(5, 3000)
	put(t, s, "kept", old)
	if _, err := s.Put(ctx(t), "kept", &failing{r: bytes.NewReader(data(6, 9000)), err: errBroken}); !errors.Is(err, errBroken) {
		t.Fatalf("Put over a blob of a failing input: err = %v", err)
	}
	got, info := get(t, s, "kept", 0, -1)
	if !bytes.Equal(got, old) {
		t.Error("a failed Put changed the blob it would have replaced")
	}
	checkInfo(t, info, "kept", old)
}

// cancelling cancels its context after n bytes.
type cancelling struct {
	r      io.Reader
	n      int
	cancel context.CancelFunc
}

func (c *cancelling) Read(p []byte) (int, error) {
	if c.n <= 0 {
		c.cancel()
	}
	n, err := c.r.Read(p[:min(len(p), max(c.n, 1))])
	c.n -= n
	return n, err
}

func testCancelledPut(t *testing.T, s blob.Store) {
	for _, n := range []int{1000, 12 << 20} {
		cctx, cancel := context.WithCancel(ctx(t))
		key := fmt.Sprintf("cancelled/%d", n)
		_, err := s.Put(cctx, key, &cancelling{r: bytes.NewReader(data(7, 2*n)), n: n, cancel: cancel})
		cancel()
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("Put with its context cancelled midway: err = %v, want context.Canceled", err)
		}
		checkAbsent(t, s, key)
	}
}

func testConcurrentPuts(t *testing.T, s blob.Store) {
	const n = 8
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range n {
		wg.Go(func() {
			// Each in its own directory, and each directory later emptied
			// while others are written, for backends with directories.
			key := fmt.Sprintf("c/%d/blob", i)
			if _, errs[i] = s.Put(ctx(t), key, bytes.NewReader(data(uint64(100+i), 50_000+i))); errs[i] != nil {
				return
			}
			errs[i] = s.Delete(ctx(t), key)
			if errs[i] == nil {
				_, errs[i] = s.Put(ctx(t), key, bytes.NewReader(data(uint64(100+i), 50_000+i)))
			}
		})
	}
	wg.Wait()
	for i := range n {
		if errs[i] != nil {
			t.Fatalf("concurrent Put %d: %v", i, errs[i])
		}
		key := fmt.Sprintf("c/%d/blob", i)
		b := data(uint64(100+i), 50_000+i)
		got, info := get(t, s, key, 0, -1)
		if !bytes.Equal(got, b) {
			t.Errorf("%s does not read back as written", key)
		}
		checkInfo(t, info, key, b)
	}
	if got := list(t, s, "c/"); len(got) != n {
		t.Errorf("List after %d concurrent Puts shows %d", n, len(got))
	}
}

// generator yields size bytes that do not compress, without holding them:
// the same stream for the same seed. It samples the heap as it goes.
type generator struct {
	rng  *rand.ChaCha8
	left int64
	heap *heapWatch
	read int64
}

func newGenerator(seed uint64, size int64, heap *heapWatch) *generator {
	return &generator{rng: rand.NewChaCha8(seedOf(seed)), left: size, heap: heap}
}

func (g *generator) Read(p []byte) (int, error) {
	if g.left <= 0 {
		return 0, io.EOF
	}
	p = p[:min(int64(len(p)), g.left)]
	_, _ = g.rng.Read(p)
	g.left -= int64(len(p))
	before := g.read
	g.read += int64(len(p))
	// Every 8 MiB: ReadMemStats stops the world, so not on every read.
	if g.heap != nil && before>>23 != g.read>>23 {
		g.heap.sample()
	}
	return len(p), nil
}

// heapWatch keeps the largest heap seen above where it started, and what
// the process took from the system meanwhile (heap, stacks, the runtime's
// own), for the log.
type heapWatch struct {
	base, peak uint64
	sysBase    uint64
	sysPeak    uint64
}

func newHeapWatch() *heapWatch {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return &heapWatch{base: m.HeapAlloc, peak: m.HeapAlloc, sysBase: m.Sys, sysPeak: m.Sys}
}

func (h *heapWatch) sample() {
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	h.peak = max(h.peak, m.HeapAlloc)
	h.sysPeak = max(h.sysPeak, m.Sys)
}

func (h *heapWatch) growth() uint64 { return h.peak - h.base }

// testLarge streams a 200 MB blob in and out, compares it byte for byte
// with the generator's stream, and checks the heap grew by less than 64 MB
// on the way.
func testLarge(t *testing.T, s blob.Store) {
	Large(t, s, LargeSize, LargeGrowth)
}

// Large is testLarge for any size and bound (for benchmarks and trials).
func Large(t testing.TB, s blob.Store, size int64, bound uint64) {
	heap := newHeapWatch()
	start := time.Now()
	d := blob.NewDigest()
	info, err := s.Put(t.Context(), "large/blob", io.TeeReader(newGenerator(42, size, heap), d))
	if err != nil {
		t.Fatalf("Put of %d bytes: %v", size, err)
	}
	putTook := time.Since(start)
	heap.sample()
	if info.Size != size || info.SHA256 != d.Sum() {
		t.Fatalf("Put of %d bytes: info = %+v, want sha256 %s", size, info, d.Sum())
	}
	start = time.Now()
	rc, _, err := s.Get(t.Context(), "large/blob", 0, -1)
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	want := newGenerator(42, size, heap)
	n, err := compare(rc, want)
	if err != nil {
		t.Fatalf("reading the blob back: after %d bytes: %v", n, err)
	}
	if n != size {
		t.Fatalf("read back %d bytes, want %d", n, size)
	}
	getTook := time.Since(start)
	heap.sample()
	t.Logf("%d MB: put %v, get %v, heap grew by at most %.1f MB (bound %d MB), memory from the system by %.1f MB",
		size>>20, putTook.Round(time.Millisecond), getTook.Round(time.Millisecond), float64(heap.growth())/(1<<20), bound>>20,
		float64(heap.sysPeak-heap.sysBase)/(1<<20))
	if heap.growth() >= bound {
		t.Errorf("the heap grew by %.1f MB while a %d MB blob went through, want under %d MB",
			float64(heap.growth())/(1<<20), size>>20, bound>>20)
	}
	if err := s.Delete(t.Context(), "large/blob"); err != nil {
		t.Fatal(err)
	}
}

// compare reads got and want to their ends and says where they differ.
func compare(got, want io.Reader) (int64, error) {
	a, b := make([]byte, 64<<10), make([]byte, 64<<10)
	var n int64
	for {
		k, err := io.ReadFull(got, a)
		if err != nil && err != io.ErrUnexpectedEOF && err != io.EOF {
			return n, err
		}
		if _, werr := io.ReadFull(want, b[:k]); werr != nil {
			return n, fmt.Errorf("longer than written")
		}
		if !bytes.Equal(a[:k], b[:k]) {
			return n, fmt.Errorf("bytes differ from what was written")
		}
		n += int64(k)
		if err != nil {
			if m, _ := want.Read(b[:1]); m > 0 {
				return n, fmt.Errorf("shorter than written")
			}
			return n, nil
		}
	}
}
