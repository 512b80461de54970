package httpapi

import (
	"encoding/json"
	"strings"
	"testing"
)

// Frames are valid JSON and hold the lines in order; a frame is only cut
// when the next line would pass a cap; a line larger than a frame travels
// alone.
func TestFrameCaps(t *testing.T) {
	t.Parallel()
	var lines []Line
	for n := int64(1); n <= 2500; n++ {
		lines = append(lines, Line{LineNumber: n, Text: "x"})
	}
	lines = append(lines,
		Line{LineNumber: 2501, Text: strings.Repeat("y", 100<<10)}, // larger than a frame
		Line{LineNumber: 2502, Text: strings.Repeat("z", 40<<10)},
		Line{LineNumber: 2503, Text: strings.Repeat("z", 40<<10)},
		Line{LineNumber: 2504, Text: "x"})

	f := newFrame()
	type sent struct {
		lines []Line
		bytes int
	}
	var frames []sent
	flush := func() {
		var m struct {
			Type  string `json:"type"`
			Lines []Line `json:"lines"`
		}
		msg := f.message()
		if err := json.Unmarshal(msg, &m); err != nil || m.Type != "lines" {
			t.Fatalf("frame %.100q: %v", msg, err)
		}
		frames = append(frames, sent{m.Lines, len(msg)})
		f.reset()
	}
	for _, l := range lines {
		if !f.encode(&l) {
			flush()
		}
		f.add()
	}
	flush()

	next := int64(1)
	for i, fr := range frames {
		n := len(fr.lines)
		if n > maxFrameLines || (fr.bytes > maxFrameBytes && n > 1) {
			t.Errorf("frame %d: %d lines, %d bytes", i, n, fr.bytes)
		}
		for _, l := range fr.lines {
			if l.LineNumber != next {
				t.Fatalf("frame %d: line %d, want %d", i, l.LineNumber, next)
			}
			next++
		}
		if i+1 < len(frames) {
			// It was cut because the next line did not fit.
			b, _ := json.Marshal(frames[i+1].lines[0])
			if n < maxFrameLines && fr.bytes+len(b)+2 <= maxFrameBytes {
				t.Errorf("frame %d (%d lines, %d bytes) was cut before a %d-byte line that fitted", i, n, fr.bytes, len(b))
			}
		}
	}
	if next != 2505 {
		t.Fatalf("frames end at line %d", next-1)
	}
	if len(frames) != 6 { // 3 of small lines, 2501 alone, 2502 alone (2503 would pass the cap), 2503 with 2504
		var sizes []int
		for _, fr := range frames {
			sizes = append(sizes, len(fr.lines))
		}
		t.Errorf("frames of %v lines", sizes)
	}
}
