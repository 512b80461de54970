// Command emitter is the job the bench harness runs: it prints count lines
// "<n> <Unix nanoseconds when written>".
//
// It is a program of its own, not a mode of the harness, because a job's
// start-up is part of what a throughput run pays for every job: the
// harness is a large program whose start takes about ten times as long as
// this one's, which would be measuring the harness, not spool.
//
// Unpaced, it writes the way most programs write into a pipe: through a
// 4 KiB buffer, so a write carries many lines. Paced (-rate), every line is
// its own write, so the time it carries is when it entered the pipe, which
// is what a live-latency measurement reads back.
package main

import (
	"bufio"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"time"
)

func main() {
	count := flag.Int("count", 1000, "lines")
	rate := flag.Float64("rate", 0, "lines per second (0: unpaced, written through a 4 KiB buffer)")
	warmup := flag.Duration("warmup", 0, "pause before the first line")
	flag.Parse()
	time.Sleep(*warmup)
	if err := emit(os.Stdout, *count, *rate); err != nil {
		fmt.Fprintln(os.Stderr, "emitter:", err)
		os.Exit(1)
	}
}

// emit writes count lines to out, at rate lines per second (0: as fast as
// it can, through a buffer).
func emit(out io.Writer, count int, rate float64) error {
	var w interface {
		io.Writer
		Flush() error
	}
	if rate > 0 {
		w = unbuffered{out}
	} else {
		w = bufio.NewWriterSize(out, 4096)
	}
	start := time.Now()
	line := make([]byte, 0, 64)
	for i := 1; i <= count; i++ {
		if rate > 0 {
			due := start.Add(time.Duration(float64(i-1) / rate * float64(time.Second)))
			if d := time.Until(due); d > 0 {
				time.Sleep(d)
			}
		}
		line = strconv.AppendInt(line[:0], int64(i), 10)
		line = append(line, ' ')
		line = strconv.AppendInt(line, time.Now().UnixNano(), 10)
		line = append(line, '\n')
		if _, err := w.Write(line); err != nil {
			return err
		}
	}
	return w.Flush()
}

// unbuffered writes each line as it comes.
type unbuffered struct{ io.Writer }

func (unbuffered) Flush() error { return nil }
