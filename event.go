package spool

import (
	"fmt"
	"time"
)

// EventType is what kind of entry of a job's log an Event is.
type EventType uint8

// The event types.
const (
	// EventOutput: lines the command wrote.
	EventOutput EventType = iota + 1
	// EventProcessStart: the command started (an attempt began).
	EventProcessStart
	// EventProcessEnd: the command exited.
	EventProcessEnd
	// EventProcessError: the command could not run, or spool stopped it.
	EventProcessError
)

var eventTypeNames = [...]string{"unspecified", "output", "process_start", "process_end", "process_error"}

// String is the type's lower-case name ("process_end").
func (t EventType) String() string {
	if int(t) < len(eventTypeNames) {
		return eventTypeNames[t]
	}
	return fmt.Sprintf("EventType(%d)", uint8(t))
}

// Stream says which of the command's streams a line came from.
type Stream uint8

// The streams. A command on a pseudo-terminal has one stream, Stdout.
const (
	Stdout Stream = iota + 1
	Stderr
)

// String is "stdout" or "stderr".
func (s Stream) String() string {
	switch s {
	case Stdout:
		return "stdout"
	case Stderr:
		return "stderr"
	}
	return fmt.Sprintf("Stream(%d)", uint8(s))
}

// Event is one entry of a job's log, as a reader receives it. Every event
// has a sequence, unique within the job and increasing without gaps; an
// output event covers one sequence per line, from Sequence on.
type Event struct {
	// Sequence is the event's place in the log (an output event's: its
	// first line's).
	Sequence int64
	// Time is when the event happened (an output event's: its first
	// line's).
	Time time.Time
	// Attempt is the attempt that produced the event.
	Attempt int
	Type    EventType
	// Lines are an output event's lines, in order.
	Lines []Line
	// Start is set on an EventProcessStart, End on an EventProcessEnd.
	Start *ProcessStart
	End   *ProcessEnd
	// Error is an EventProcessError's message.
	Error string
}

// Line is one line of a job's output.
type Line struct {
	// Sequence is the line's place in the job's log.
	Sequence int64
	// Number is the line's ordinal among the job's output lines, from 1.
	Number int64
	Stream Stream
	// Text is the line without its newline; not necessarily UTF-8.
	Text string
	// Partial: no newline followed Text. The line goes on in the next line
	// of its stream (it was longer than a batch may hold), or it was the
	// command's last output.
	Partial bool
	// Time is when the worker read the line (for a log recorded without
	// times, the batch's time spaced by the job's playback interval).
	Time time.Time
}

// ProcessStart is what an EventProcessStart says.
type ProcessStart struct {
	PID int
	// Command is what was run, for people (argv joined, or the script).
	Command string
	// WorkerID names the worker that runs the attempt.
	WorkerID string
	// PTY: the command runs on a pseudo-terminal, so its output is one
	// stream.
	PTY bool
}

// ProcessEnd is what an EventProcessEnd says.
type ProcessEnd struct {
	ExitCode int
	Duration time.Duration
	// Signal names the signal that ended the process ("killed"), if one
	// did.
	Signal string
}
