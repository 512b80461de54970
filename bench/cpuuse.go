package main

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
)

// Where a job's CPU goes: the rates in the goals table say how fast, and
// these say which process paid for it, read from /proc around the phase
// measured (Linux; elsewhere nothing is printed). A rate held below its
// baseline while the machine is not busy is a matter of round trips, not
// of work; a process that takes more a job than its counterpart in the
// baseline is where to look first.

// clockTick is the unit of /proc's CPU times: USER_HZ, 100 on every Linux
// that Go runs on.
const clockTick = 10 * time.Millisecond

// cpuUse is the CPU time spent so far, as one snapshot.
type cpuUse struct {
	ok                bool
	machine           time.Duration // every CPU, all but idle and waiting for I/O
	server, self      time.Duration // the server's process and this one
	children          time.Duration // the processes this one waited for
	postgres          time.Duration // every process named postgres
	walBytes          int64         // PostgreSQL's WAL position
	serverPID, pgWant bool
}

// cpuNow takes a snapshot: of the server process pid (0: none), and of
// PostgreSQL's processes and WAL when pg is a connection string ("": not).
func cpuNow(pid int, pg string) cpuUse {
	u := cpuUse{serverPID: pid > 0, pgWant: pg != ""}
	stat, err := os.ReadFile("/proc/stat")
	if err != nil {
		return u
	}
	u.ok = true
	line, _, _ := strings.Cut(string(stat), "\n")
	for i, f := range strings.Fields(line)[1:] {
		if i == 3 || i == 4 { // idle, iowait
			continue
		}
		n, _ := strconv.ParseInt(f, 10, 64)
		u.machine += time.Duration(n) * clockTick
	}
	self := procTimes(os.Getpid())
	u.self, u.children = self[0], self[1]
	if pid > 0 {
		u.server = procTimes(pid)[0]
	}
	if pg != "" {
		u.postgres = postgresTimes()
		u.walBytes = walPosition(pg)
	}
	return u
}

// procTimes is a process's own CPU time (utime+stime) and that of the
// children it waited for (cutime+cstime).
func procTimes(pid int) [2]time.Duration {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return [2]time.Duration{}
	}
	// The fields after the command's name, which is in parentheses and
	// may hold spaces: state is [0], utime [11], stime [12], cutime [13],
	// cstime [14].
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if len(f) < 15 {
		return [2]time.Duration{}
	}
	n := func(i int) time.Duration {
		v, _ := strconv.ParseInt(f[i], 10, 64)
		return time.Duration(v) * clockTick
	}
	return [2]time.Duration{n(11) + n(12), n(13) + n(14)}
}

// postgresTimes is the CPU time of every process named postgres: the
// database's backends and its writers.
func postgresTimes() time.Duration {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return 0
	}
	var total time.Duration
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if comm, err := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid)); err == nil && strings.TrimSpace(string(comm)) == "postgres" {
			total += procTimes(pid)[0]
		}
	}
	return total
}

// walPosition is the database's WAL insert position in bytes (0 when it
// cannot be read).
func walPosition(url string) int64 {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		return 0
	}
	defer conn.Close(ctx)
	var n int64
	if conn.QueryRow(ctx, "SELECT pg_current_wal_lsn() - '0/0'::pg_lsn").Scan(&n) != nil {
		return 0
	}
	return n
}

// perJob describes the CPU spent from u to later, per job of n, in the
// terms given for this process and its children ("": left out).
func (u cpuUse) perJob(later cpuUse, n int, self, children string) string {
	if !u.ok || !later.ok || n <= 0 {
		return ""
	}
	each := func(d time.Duration) string { return thousands(float64((d / time.Duration(n)).Microseconds())) + " us" }
	var parts []string
	if u.pgWant {
		parts = append(parts, "PostgreSQL "+each(later.postgres-u.postgres))
	}
	if u.serverPID {
		parts = append(parts, "server "+each(later.server-u.server))
	}
	if self != "" {
		parts = append(parts, self+" "+each(later.self-u.self))
	}
	if children != "" {
		parts = append(parts, children+" "+each(later.children-u.children))
	}
	out := strings.Join(parts, ", ") + "; the machine " + each(later.machine-u.machine)
	if u.pgWant && later.walBytes > u.walBytes {
		out += fmt.Sprintf("; WAL %s bytes", thousands(float64(later.walBytes-u.walBytes)/float64(n)))
	}
	return out
}
