package spool

import (
	"fmt"
	"strings"
	"time"
)

// Schedule is a periodic job: at each tick of its Cron expression, read in
// its Timezone, one job is enqueued, once, whichever of the servers
// sharing a store sees the tick first.
type Schedule struct {
	// Name is letters, digits, '-', '_' and '.', at most 80 characters.
	Name string
	// Cron is a standard cron expression (minute hour day-of-month month
	// day-of-week), a descriptor such as @hourly or @every 10m; a sixth,
	// leading field gives seconds.
	Cron string
	// Timezone is the IANA time zone Cron is read in ("": UTC).
	Timezone string
	// Job is what each tick enqueues.
	Job ScheduleJob
	// Overlap is what a tick does while the job of an earlier tick has
	// not ended (zero: OverlapAllow).
	Overlap Overlap
	// Missed is what the schedule does with ticks that passed while no
	// server ran (zero: MissedRunOnce).
	Missed Missed
	// Paused: no ticks run, and those that pass are not run later.
	Paused    bool
	CreatedAt time.Time
	UpdatedAt time.Time
	// LastTickAt is the last tick run (or skipped), LastJobID the job it
	// made (empty when it made none).
	LastTickAt time.Time
	LastJobID  string
	// NextTickAt is the next tick (zero while paused).
	NextTickAt time.Time
	// Revision grows with every change of the schedule.
	Revision int64
}

// ScheduleJob is the job a schedule's ticks enqueue.
type ScheduleJob struct {
	// Queue is the job's queue ("": "default").
	Queue  string
	Params JobParams
	// Priority is 1 (first) to 4 (0: 2).
	Priority int
	// Retries and MaxAttempts are the job's budgets, as for a submitted
	// job (0: never retried; the server's attempts).
	Retries     int
	MaxAttempts int
	// Notify are URLs told when each job ends.
	Notify []string
}

// Overlap is what a schedule's tick does while the job of an earlier tick
// has not ended. The zero Overlap is the server's default (OverlapAllow).
type Overlap uint8

// The overlap policies.
const (
	// OverlapAllow: enqueue the tick's job anyway.
	OverlapAllow Overlap = iota + 1
	// OverlapSkip: enqueue nothing for the tick while the schedule's last
	// job has not ended.
	OverlapSkip
)

var overlapNames = [...]string{"unspecified", "allow", "skip"}

// Overlaps returns the overlap policies. The slice is the caller's.
func Overlaps() []Overlap { return []Overlap{OverlapAllow, OverlapSkip} }

// String is the policy's name ("skip"), the one the command line uses.
func (o Overlap) String() string {
	if int(o) < len(overlapNames) {
		return overlapNames[o]
	}
	return fmt.Sprintf("Overlap(%d)", uint8(o))
}

// MarshalText is the policy's name.
func (o Overlap) MarshalText() ([]byte, error) { return []byte(o.String()), nil }

// ParseOverlap is the policy named name ("allow" or "skip", any case, or
// the wire's "OVERLAP_SKIP"). Anything else wraps ErrInvalidArgument.
func ParseOverlap(name string) (Overlap, error) {
	return parseEnum(name, "overlap_", "an overlap policy", Overlaps())
}

// Missed is what a schedule does with the ticks that passed while no
// server ran. The zero Missed is the server's default (MissedRunOnce).
type Missed uint8

// The policies for missed ticks.
const (
	// MissedRunOnce: run the latest missed tick, once.
	MissedRunOnce Missed = iota + 1
	// MissedSkip: run none of them; go on from the next tick.
	MissedSkip
)

var missedNames = [...]string{"unspecified", "run-once", "skip"}

// MissedPolicies returns the policies for missed ticks. The slice is the
// caller's.
func MissedPolicies() []Missed { return []Missed{MissedRunOnce, MissedSkip} }

// String is the policy's name ("run-once"), the one the command line uses.
func (m Missed) String() string {
	if int(m) < len(missedNames) {
		return missedNames[m]
	}
	return fmt.Sprintf("Missed(%d)", uint8(m))
}

// MarshalText is the policy's name.
func (m Missed) MarshalText() ([]byte, error) { return []byte(m.String()), nil }

// ParseMissed is the policy named name ("run-once" or "skip", any case,
// or the wire's "MISSED_RUN_ONCE"). Anything else wraps
// ErrInvalidArgument.
func ParseMissed(name string) (Missed, error) {
	return parseEnum(name, "missed_", "a policy for missed ticks", MissedPolicies())
}

// parseEnum is the one of values named name: its String, or its wire name
// (prefix, then the name with '_' for '-'), in any case.
func parseEnum[T fmt.Stringer](name, prefix, what string, values []T) (T, error) {
	n := strings.ToLower(strings.TrimSpace(name))
	n = strings.ReplaceAll(strings.TrimPrefix(n, prefix), "_", "-")
	for _, v := range values {
		if v.String() == n {
			return v, nil
		}
	}
	var zero T
	return zero, fmt.Errorf("%w: %q is not %s; use %s", ErrInvalidArgument, truncate(name, 40), what, names(values))
}
