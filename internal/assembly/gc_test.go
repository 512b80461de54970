package assembly

import (
	"os"
	"runtime"
	"runtime/debug"
	"testing"
	"time"
)

// TuneGC leaves the collector alone when the operator set GOGC or
// GOMEMLIMIT.
func TestTuneGCLeavesTheOperatorsChoice(t *testing.T) {
	before := debug.SetGCPercent(100)
	t.Cleanup(func() { debug.SetGCPercent(before) })
	for _, env := range []string{"GOGC", "GOMEMLIMIT"} {
		t.Run(env, func(t *testing.T) {
			t.Setenv(env, map[string]string{"GOGC": "300", "GOMEMLIMIT": "1GiB"}[env])
			TuneGC()
			if got := debug.SetGCPercent(100); got != 100 {
				t.Fatalf("with %s set, TuneGC changed the GC percent to %d", env, got)
			}
		})
	}
}

func TestGCPercentFor(t *testing.T) {
	const mb = 1 << 20
	for _, c := range []struct {
		live, floor uint64
		want        int
	}{
		{0, 32 * mb, maxGCPercent},
		{1 * mb, 32 * mb, 3100},          // next collection at 32 MB
		{16 * mb, 32 * mb, 100},          // at 32 MB: the floor is above live x1.5
		{24 * mb, 32 * mb, minGCPercent}, // live x1.5 = 36 MB, above the floor
		{64 * mb, 32 * mb, minGCPercent},
		{1, 32 * mb, maxGCPercent},
	} {
		if got := gcPercentFor(c.live, c.floor); got != c.want {
			t.Errorf("gcPercentFor(%d, %d) = %d, want %d", c.live, c.floor, got, c.want)
		}
	}
}

// With a small live heap the floor spares collections: 512 MB of garbage
// made in 64 KB pieces is collected a few dozen times at most, where
// GOGC=50 alone collects it hundreds of times. With a live heap above the
// floor, the percent is back at 50.
func TestHeapFloorSparesCollections(t *testing.T) {
	if os.Getenv("GOGC") != "" || os.Getenv("GOMEMLIMIT") != "" {
		t.Fatal("run this test without GOGC and GOMEMLIMIT: it measures the collector's own settings")
	}
	before := debug.SetGCPercent(minGCPercent)
	t.Cleanup(func() { debug.SetGCPercent(before) })
	runtime.GC()

	cycles := func(garbage int) uint32 {
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		n := ms.NumGC
		for range garbage / (64 << 10) {
			sink = make([]byte, 64<<10)
		}
		runtime.ReadMemStats(&ms)
		return ms.NumGC - n
	}
	alone := cycles(512 << 20)

	const floor = 32 << 20
	k := keepHeapFloor(floor)
	t.Cleanup(k.stop)
	runtime.GC() // the keeper tunes after this collection
	// The test binary's own live heap is a few MB (the AWS SDK's tables
	// among it), so the floor lets the heap grow at least fivefold.
	waitForPercent(t, k, func(p int) bool { return p >= 400 })
	floored := cycles(512 << 20)
	t.Logf("collections of 512 MB of garbage: %d at GOGC=50, %d with a %d MB floor", alone, floored, floor>>20)
	if floored > 40 || floored*4 > alone {
		t.Fatalf("with the floor, %d collections (at GOGC=50 alone: %d); want at most 40, and a quarter of those", floored, alone)
	}

	// A live heap above the floor: collections at half its growth again.
	live := make([][]byte, 0, 64)
	for range cap(live) {
		live = append(live, make([]byte, 1<<20)) // 64 MB live, the floor is 32
	}
	runtime.GC()
	waitForPercent(t, k, func(p int) bool { return p == minGCPercent })
	runtime.KeepAlive(live)
}

var sink []byte

// waitForPercent waits for the keeper to set a percent ok accepts (it
// tunes in a finalizer, after the collection that found the live heap).
func waitForPercent(t *testing.T, k *heapFloorKeeper, ok func(int) bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		p := int(k.percent.Load())
		if ok(p) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the GC percent stayed at %d", p)
		}
		runtime.GC()
		time.Sleep(10 * time.Millisecond)
	}
}
