package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
)

// emitter is the path of the job program the harness runs (bench/emitter),
// built once per run.
type emitter string

// buildEmitter builds bench/emitter into dir with the go command that runs
// the harness.
func buildEmitter(ctx context.Context, dir string) (emitter, error) {
	out := filepath.Join(dir, "emitter")
	cmd := exec.CommandContext(ctx, "go", "build", "-o", out, "github.com/spool-run/spool/bench/emitter")
	cmd.Stderr = os.Stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("building the job program (go build github.com/spool-run/spool/bench/emitter): %w; run the harness from the repository with `go run ./bench`", err)
	}
	return emitter(out), nil
}

// lines is the argv of a job printing count lines as fast as it can.
func (e emitter) lines(count int) []string {
	return []string{string(e), "-count", itoa(count)}
}

// paced is the argv of a job printing count lines at rate lines/s, each
// its own write, after a pause of warmup (a duration such as "500ms").
func (e emitter) paced(count, rate int, warmup string) []string {
	return append(e.lines(count), "-rate", itoa(rate), "-warmup", warmup)
}

func itoa(n int) string { return strconv.Itoa(n) }
