package assembly

import (
	"os"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync/atomic"
)

// TuneGC sets the garbage collector of a process that runs a server the
// way `spool server` runs it: a collection when the heap has grown by half
// since the last one (GOGC=50), not when it has doubled, but not before
// the heap reaches heapFloor.
//
// The server's live heap is small while it works a queue (a few MB) and
// its garbage comes fast there: a job leased and completed leaves about
// 16 KB. At GOGC=50 alone that meant a collection every hundred jobs or
// so; with the floor, several times fewer (measured: the server's CPU a
// job on PostgreSQL, leases and completions of 50, about 15% less). The
// floor is low because it is paid in memory: under heavy output (1,000
// jobs printing at once) the server's peak resident size stays at 60-62
// MB with it, as without; a floor of 16 MB made it 64-66, 24 MB 74.
//
// It does nothing when GOGC or GOMEMLIMIT is set: that choice is the
// operator's. It is a process-wide setting, so only programs that are the
// server call it, not the server itself (a program embedding one keeps its
// own).
func TuneGC() {
	if os.Getenv("GOGC") != "" || os.Getenv("GOMEMLIMIT") != "" {
		return
	}
	debug.SetGCPercent(minGCPercent)
	keepHeapFloor(heapFloor)
}

const (
	// minGCPercent is how much the heap grows between collections once
	// its live part is large.
	minGCPercent = 50
	// heapFloor is the heap the server may grow to before it collects,
	// however little of it is live.
	heapFloor = 12 << 20
	// maxGCPercent bounds the percent the floor asks for when almost
	// nothing is live (as a server starts).
	maxGCPercent = 10_000
)

// gcPercentFor is the GC percent that has the next collection come when
// the heap reaches max(floor, live heap grown by minGCPercent).
func gcPercentFor(live, floor uint64) int {
	if live == 0 {
		return maxGCPercent
	}
	if live >= floor {
		return minGCPercent
	}
	p := (floor - live) * 100 / live
	return int(max(minGCPercent, min(p, maxGCPercent)))
}

// heapFloorKeeper sets the GC percent after every collection, from the
// live heap that collection found: the runtime has no lower bound on the
// heap goal of its own (GOMEMLIMIT is an upper one).
type heapFloorKeeper struct {
	floor   uint64
	percent atomic.Int32 // read by tests
	live    []metrics.Sample
	stopped atomic.Bool
}

// keepHeapFloor starts keeping the heap floor for the life of the process
// (or until stop, in tests).
func keepHeapFloor(floor uint64) *heapFloorKeeper {
	k := &heapFloorKeeper{floor: floor, live: []metrics.Sample{{Name: "/gc/heap/live:bytes"}}}
	k.tune()
	k.arm()
	return k
}

// gcSentinel is garbage the moment it is made: its finalizer runs after the
// next collection, and arms the next one. It holds a pointer, so it is
// never one of the tiny allocations the runtime packs together and frees
// late.
type gcSentinel struct{ k *heapFloorKeeper }

func (k *heapFloorKeeper) arm() {
	runtime.SetFinalizer(&gcSentinel{k: k}, func(s *gcSentinel) {
		if !s.k.stopped.Load() {
			s.k.tune()
			s.k.arm()
		}
	})
}

// tune sets the GC percent for the live heap the last collection found.
// Finalizers run one at a time, so tune never runs beside itself.
func (k *heapFloorKeeper) tune() {
	metrics.Read(k.live)
	if k.live[0].Value.Kind() != metrics.KindUint64 {
		return
	}
	if p := gcPercentFor(k.live[0].Value.Uint64(), k.floor); int32(p) != k.percent.Load() {
		debug.SetGCPercent(p)
		k.percent.Store(int32(p))
	}
}

// stop stops keeping the floor (the GC percent stays as last set).
func (k *heapFloorKeeper) stop() { k.stopped.Store(true) }
