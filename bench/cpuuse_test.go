package main

import (
	"os"
	"testing"
	"time"
)

var spin int

func TestCPUPerJob(t *testing.T) {
	u := cpuUse{ok: true, serverPID: true, pgWant: true, machine: time.Second, server: 100 * time.Millisecond,
		self: 10 * time.Millisecond, postgres: 200 * time.Millisecond, walBytes: 1000}
	later := u
	later.machine += 3 * time.Second
	later.server += time.Second
	later.self += 200 * time.Millisecond
	later.children += 500 * time.Millisecond
	later.postgres += 1500 * time.Millisecond
	later.walBytes += 2_500_000
	got := u.perJob(later, 1000, "worker", "commands")
	want := "PostgreSQL 1,500 us, server 1,000 us, worker 200 us, commands 500 us; the machine 3,000 us; WAL 2,500 bytes"
	if got != want {
		t.Fatalf("perJob =\n%s\nwant\n%s", got, want)
	}
	if got := (cpuUse{}).perJob(later, 1000, "worker", ""); got != "" {
		t.Fatalf("without a first snapshot: %q, want nothing", got)
	}
}

// /proc counts this process's own CPU: spinning shows, however busy the
// machine (the spin lasts until it does, or 10 s).
func TestProcTimesCountsOwnCPU(t *testing.T) {
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		t.Fatalf("no /proc on this machine (the bench's CPU rows need Linux): %v", err)
	}
	before := procTimes(os.Getpid())[0]
	for start := time.Now(); procTimes(os.Getpid())[0]-before < 50*time.Millisecond; {
		if time.Since(start) > 10*time.Second {
			t.Fatalf("10 s of spinning counted %v of CPU", procTimes(os.Getpid())[0]-before)
		}
		for range 1_000_000 {
			spin++
		}
	}
	if u := cpuNow(0, ""); !u.ok || u.machine <= 0 {
		t.Fatalf("cpuNow = %+v, want the machine's CPU time", u)
	}
}
