package ingest_test

import (
	"bytes"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/spool-run/spool/internal/ingest"
)

// FuzzAppendLine: an event AppendLine writes reads back through
// DecodeLines as the same event (its message without the newline that
// ended it), or is refused there as the decoder refuses what a shipper
// sends wrong (an empty id, a control character in a source); what
// AppendLine refuses is text that is not UTF-8, and it then writes
// nothing.
func FuzzAppendLine(f *testing.F) {
	f.Add("/ecs/api:ecs/api/4f6c", "37939195127542392587417405349120931706454553419410407424", int64(1700000000000), "GET / 200\n", false)
	f.Add("s", "1", int64(1), "two\nlines\r\n\"quoted\" \u2028 \\", true)
	f.Add("s", "", int64(0), "", false)
	f.Add("s\x00", "\xff", int64(-5), "\xc3", false)
	f.Fuzz(func(t *testing.T, source, id string, ms int64, msg string, small bool) {
		e := ingest.Event{Source: source, ID: id, Timestamp: time.UnixMilli(ms).UTC(), Message: msg}
		prefix := []byte("kept\n")
		line, err := ingest.AppendLine(prefix, e)
		if err != nil {
			if !errors.Is(err, ingest.ErrMalformed) || len(line) != len(prefix) {
				t.Fatalf("refused with %q (%d bytes written)", err, len(line)-len(prefix))
			}
			return
		}
		if !bytes.HasPrefix(line, prefix) || bytes.Count(line[len(prefix):], []byte("\n")) != 1 || !bytes.HasSuffix(line, []byte("\n")) {
			t.Fatalf("wrote %q, want one line after %q", line, prefix)
		}
		limits := fuzzLimits(small)
		got, err := ingest.DecodeLines(bytes.NewReader(line[len(prefix):]), limits)
		if err != nil {
			checkRefused(t, err)
			return
		}
		want := e
		if m, ok := strings.CutSuffix(want.Message, "\n"); ok {
			want.Message = strings.TrimSuffix(m, "\r")
		}
		if len(got) != 1 || got[0] != want {
			t.Fatalf("%q reads back as %+v, want %+v", line, got, want)
		}
	})
}
