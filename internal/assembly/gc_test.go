package assembly

import (
	"os"
	"runtime/debug"
	"testing"
)

// TuneGC collects at half the heap's growth unless GOGC says otherwise.
func TestTuneGC(t *testing.T) {
	before := debug.SetGCPercent(100)
	t.Cleanup(func() { debug.SetGCPercent(before) })
	t.Setenv("GOGC", "300")
	TuneGC()
	if got := debug.SetGCPercent(100); got != 100 {
		t.Fatalf("with GOGC set, TuneGC changed the GC percent to %d", got)
	}
	os.Unsetenv("GOGC") // restored by t.Setenv's cleanup
	TuneGC()
	if got := debug.SetGCPercent(100); got != 50 {
		t.Fatalf("TuneGC set the GC percent to %d, want 50", got)
	}
}
