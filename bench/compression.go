package main

import (
	"encoding/hex"
	"fmt"
	"math/rand/v2"
	"strconv"
	"time"

	"github.com/spool-run/spool/internal/events"
)

// compressionLines is how many lines each kind of output has.
const compressionLines = 10_000

// compressionGoal: zstd stores output that does not repeat itself in at
// most this share of S2's bytes (DynamoDB bills writes and reads by the
// kilobyte, so the share is that of the log's units).
const compressionGoal = 0.6

// compressionGoals reports the bytes stored per byte of output with each
// codec, as the store keeps batches of the default size (50 lines) that a
// worker sent: short lines (`seq`), and lines of 100 random hex characters.
// S2 is what workers send; zstd is the AWS store's default, recoded from
// it. No server is involved: the payloads are what a store writes.
func compressionGoals() ([]goalRow, error) {
	rnd := rand.New(rand.NewPCG(1, 2))
	buf := make([]byte, 50)
	kinds := []struct {
		name string
		line func(i int) string
	}{
		{"`seq` lines", strconv.Itoa},
		{"100-char hex lines", func(int) string {
			for j := range buf {
				buf[j] = byte(rnd.Uint32())
			}
			return hex.EncodeToString(buf)
		}},
	}
	var rows []goalRow
	for k, kind := range kinds {
		text := make([]string, compressionLines)
		for i := range text {
			text[i] = kind.line(i + 1)
		}
		s2, zstd, err := storedPerOutputByte(text)
		if err != nil {
			return nil, err
		}
		row := goalRow{
			measure:  "stored bytes per output byte, " + kind.name,
			spool:    fmt.Sprintf("zstd %.3f", zstd),
			baseline: fmt.Sprintf("s2 %.3f (%.0f%%)", s2, 100*zstd/s2),
			info:     true,
		}
		if k == len(kinds)-1 {
			row.info = false
			row.goal = fmt.Sprintf("zstd <= %.0f%% of s2", 100*compressionGoal)
			row.met = zstd <= compressionGoal*s2
		}
		rows = append(rows, row)
	}
	return rows, nil
}

// storedPerOutputByte stores lines in batches of 50 as a worker encodes
// them (S2) and as a zstd store recodes them, and returns each payload
// size over the output's bytes (each line and its newline).
func storedPerOutputByte(lines []string) (s2, zstd float64, err error) {
	var output, s2Bytes, zstdBytes int
	start := time.UnixMilli(1_700_000_000_000)
	for from := 0; from < len(lines); from += 50 {
		ls := lines[from:min(from+50, len(lines))]
		for _, l := range ls {
			output += len(l) + 1
		}
		b := events.Batch{Sequence: int64(from + 2), FirstLine: int64(from + 1), Attempt: 1,
			Lines: events.TextLines(start, ls...)}
		for i := range b.Lines { // a line a millisecond, each with its time
			b.Lines[i].Time = start.Add(time.Duration(from+i) * time.Millisecond)
		}
		payload := events.EncodeBatch(b)
		z, err := events.Zstd.Recode(payload)
		if err != nil {
			return 0, 0, err
		}
		s2Bytes += len(payload)
		zstdBytes += len(z)
	}
	return float64(s2Bytes) / float64(output), float64(zstdBytes) / float64(output), nil
}
