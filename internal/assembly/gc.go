package assembly

import (
	"os"
	"runtime/debug"
)

// TuneGC sets the garbage collector of a process that runs a server the
// way `spool server` runs it: a collection when the heap has grown by half
// since the last one (GOGC=50), not when it has doubled. The server's live
// heap is small (about 10 MB under a thousand jobs' output) and its garbage
// comes in bursts of requests, which the default let grow the heap to
// twice the live part; at half, its peak memory is about 5 MB lower, for a
// garbage-collection cost that does not show in its throughput. It does
// nothing when GOGC is set: that choice is the operator's. It is a
// process-wide setting, so only programs that are the server call it, not
// the server itself (a program embedding one keeps its own).
func TuneGC() {
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(50)
	}
}
