package outbox

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
)

// Making a file is one of the costliest things a worker does for a short
// job: on ext4, creating an outbox's segment costs 300-450 us of kernel
// time, where reopening an existing file costs about 8 us and a rename
// about 18. For jobs that end in milliseconds it was the worker's largest
// cost after starting the process. So the segments of removed outboxes are
// emptied and kept as spares, and a new segment is a spare renamed into
// place when there is one.
//
// A spare is always empty: it is truncated before it is renamed to a
// spare's name, so a worker killed at any point leaves either an empty
// segment (which Open removes as nothing to send) or an empty spare (which
// the next worker's NewSpares removes). Spares are named .spare-N, which
// List does not take for an outbox.

// sparePrefix starts the name of every spare file.
const sparePrefix = ".spare-"

// Spares keeps up to a number of emptied segment files in one spool
// directory for the outboxes made there. Its methods may be called from
// any goroutine.
type Spares struct {
	root string
	free chan string
	seq  atomic.Uint64
}

// NewSpares keeps up to n spare files in root. It removes the spares a
// worker that stopped before left there.
func NewSpares(root string, n int) *Spares {
	if entries, err := os.ReadDir(root); err == nil {
		for _, e := range entries {
			if strings.HasPrefix(e.Name(), sparePrefix) && e.Type().IsRegular() {
				_ = os.Remove(filepath.Join(root, e.Name()))
			}
		}
	}
	return &Spares{root: root, free: make(chan string, max(n, 0))}
}

// Create makes a new outbox as Create does, its first segment a spare if
// one is kept; the outbox's Remove keeps its segments as spares.
func (s *Spares) Create(h Header) (*Outbox, error) {
	return create(s.root, h, s)
}

// Drop removes the spares kept (as their worker stops).
func (s *Spares) Drop() {
	for {
		select {
		case spare := <-s.free:
			_ = os.Remove(spare)
		default:
			return
		}
	}
}

// take renames a spare to path and reports whether it did. Whatever was
// at path is replaced; the caller opens it with O_TRUNC in any case.
func (s *Spares) take(path string) bool {
	select {
	case spare := <-s.free:
		if err := os.Rename(spare, path); err != nil {
			_ = os.Remove(spare)
			return false
		}
		return true
	default:
		return false
	}
}

// keep empties the segment at path and keeps it as a spare, and reports
// whether it did (when there is no room, the caller removes it).
func (s *Spares) keep(path string) bool {
	if len(s.free) == cap(s.free) {
		return false
	}
	if os.Truncate(path, 0) != nil {
		return false
	}
	spare := filepath.Join(s.root, fmt.Sprintf("%s%d", sparePrefix, s.seq.Add(1)))
	if os.Rename(path, spare) != nil {
		return false
	}
	select {
	case s.free <- spare:
	default:
		_ = os.Remove(spare)
	}
	return true
}
