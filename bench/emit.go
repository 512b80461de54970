package main

import (
	"flag"
	"fmt"
	"os"
	"strconv"
	"time"
)

// emit is the job the harness runs (the harness re-executes itself with
// "emit"): count lines "<n> <unix nanos when written>", at rate lines per
// second (0: as fast as possible), after a warm-up pause that lets a
// follower attach. Each line is its own write, so its timestamp is when it
// entered the pipe.
func emit(args []string) {
	fs := flag.NewFlagSet("emit", flag.ExitOnError)
	count := fs.Int("count", 1000, "lines")
	rate := fs.Float64("rate", 0, "lines per second (0: unpaced)")
	warmup := fs.Duration("warmup", 0, "pause before the first line")
	_ = fs.Parse(args)
	time.Sleep(*warmup)
	start := time.Now()
	buf := make([]byte, 0, 64)
	for i := 1; i <= *count; i++ {
		if *rate > 0 {
			due := start.Add(time.Duration(float64(i-1) / *rate * float64(time.Second)))
			if d := time.Until(due); d > 0 {
				time.Sleep(d)
			}
		}
		buf = strconv.AppendInt(buf[:0], int64(i), 10)
		buf = append(buf, ' ')
		buf = strconv.AppendInt(buf, time.Now().UnixNano(), 10)
		buf = append(buf, '\n')
		if _, err := os.Stdout.Write(buf); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
	}
}
