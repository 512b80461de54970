package e2e

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/spool-run/spool"
	"github.com/spool-run/spool/client"
	"github.com/spool-run/spool/gen/spool/v1/spoolv1connect"
	"github.com/spool-run/spool/internal/ingest/ingesttest"
)

// What a request may cost the server before it is let in, and what a
// request over its limit may cost, measured on a real `spool server`
// process: its resident memory is read from /proc while bodies far larger
// than that memory could hold stream in.

// memory reads a process's resident memory: now (VmRSS) and at its peak
// (VmHWM), in bytes.
func memory(t *testing.T, pid int) (now, peak int64) {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatalf("reading the server's memory: %v (these tests need Linux's /proc)", err)
	}
	field := func(name string) int64 {
		for line := range strings.Lines(string(b)) {
			if rest, ok := strings.CutPrefix(line, name+":"); ok {
				kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
				if err != nil {
					t.Fatalf("/proc/%d/status: %s: %v", pid, line, err)
				}
				return kb << 10
			}
		}
		t.Fatalf("/proc/%d/status has no %s", pid, name)
		return 0
	}
	return field("VmRSS"), field("VmHWM")
}

// resetPeak makes the process's peak resident memory (VmHWM) its current
// one, so that a peak read later belongs to what happened since.
func resetPeak(t *testing.T, pid int) {
	t.Helper()
	if err := os.WriteFile(fmt.Sprintf("/proc/%d/clear_refs", pid), []byte("5"), 0); err != nil {
		t.Fatalf("resetting the server's peak memory: %v (run the tests as the user the server runs as, on Linux)", err)
	}
}

// growth runs phase and returns how far the server's peak resident memory
// rose above what it held before.
func growth(t *testing.T, pid int, phase func()) (before, peak int64) {
	t.Helper()
	before, _ = memory(t, pid)
	resetPeak(t, pid)
	phase()
	_, peak = memory(t, pid)
	return before, peak
}

const mib = 1 << 20

// filler is a request body made as it is read, so that the test holds
// none of it: head, then n bytes of fill, then tail. read counts what was
// taken of it.
type filler struct {
	head, tail []byte
	fill       byte
	n          int64
	read       atomic.Int64 // the transport may still send after the answer came
}

func newFiller(head string, fill byte, n int64, tail string) *filler {
	return &filler{head: []byte(head), fill: fill, n: n, tail: []byte(tail)}
}

func (f *filler) size() int64 { return int64(len(f.head)) + f.n + int64(len(f.tail)) }

func (f *filler) Read(p []byte) (int, error) {
	var n int
	switch {
	case len(f.head) > 0:
		n = copy(p, f.head)
		f.head = f.head[n:]
	case f.n > 0:
		n = int(min(int64(len(p)), f.n))
		for i := range n {
			p[i] = f.fill
		}
		f.n -= int64(n)
	case len(f.tail) > 0:
		n = copy(p, f.tail)
		f.tail = f.tail[n:]
	default:
		return 0, io.EOF
	}
	f.read.Add(int64(n))
	return n, nil
}

// answer is what a request got: its status, the start of its body, how
// long it took and how much of the request body was sent.
type answer struct {
	status  int
	body    string
	took    time.Duration
	sent    int64
	sendErr error
}

// call sends a request whose body is made by body; declared says whether
// its length goes in Content-Length (otherwise it is sent chunked).
func call(ctx context.Context, method, url string, header http.Header, body *filler, declared bool) answer {
	start := time.Now()
	req, err := http.NewRequestWithContext(ctx, method, url, body)
	if err != nil {
		return answer{sendErr: err}
	}
	req.Header = header.Clone()
	req.ContentLength = -1
	if declared {
		req.ContentLength = body.size()
	}
	// A connection of its own: one the server closes after refusing a
	// body must not fail another request.
	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	resp, err := (&http.Client{Transport: tr}).Do(req)
	if err != nil {
		return answer{took: time.Since(start), sent: body.read.Load(), sendErr: err}
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 4<<10))
	return answer{status: resp.StatusCode, body: string(b), took: time.Since(start), sent: body.read.Load()}
}

// together runs n calls at once and returns their answers.
func together(n int, one func(i int) answer) []answer {
	out := make([]answer, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { out[i] = one(i) })
	}
	wg.Wait()
	return out
}

// connectHeader is a Connect unary call's header in the binary encoding.
func connectHeader(key string) http.Header {
	h := http.Header{"Content-Type": {"application/proto"}, "Connect-Protocol-Version": {"1"}}
	if key != "" {
		h.Set("Authorization", "Bearer "+key)
	}
	return h
}

func jsonHeader(key string) http.Header {
	h := http.Header{"Content-Type": {"application/json"}}
	if key != "" {
		h.Set("Authorization", "Bearer "+key)
	}
	return h
}

// scatterBody is a REST scatter whose one batch is a string of n bytes:
// valid JSON to its end, so a reader has no reason to stop early.
func scatterBody(n int64) *filler {
	return newFiller(`{"queue": "q", "argv": ["true"], "batches": ["`, 'a', n, `"]}`)
}

// procBody is n bytes of a protobuf message: one string field (the
// tag of field 1, length-delimited, and its length as a varint) of 'a's.
func procBody(n int64) *filler {
	head := []byte{0x0a}
	for v := uint64(n); ; v >>= 7 {
		if v < 0x80 {
			head = append(head, byte(v))
			break
		}
		head = append(head, byte(v)|0x80)
	}
	return newFiller(string(head), 'a', n, "")
}

func pidOf(p *proc) int { return p.cmd.Process.Pid }

// TestUnauthenticatedBodiesCostNothing: four callers at once without a
// key, each sending 200 MB to the calls that take the largest bodies
// (CreateScatter over Connect, POST /api/v1/scatters over REST), are told
// 401 at once, and the server reads and holds none of it.
func TestUnauthenticatedBodiesCostNothing(t *testing.T) {
	t.Parallel()
	const size, callers, bound = 200 * mib, 4, 32 * mib
	for _, c := range []struct {
		name, method, path string
		header             http.Header
		body               func() *filler
		want               string
	}{
		{"Connect CreateScatter", http.MethodPost, spoolv1connect.ScatterServiceCreateScatterProcedure, connectHeader(""),
			func() *filler { return procBody(size) }, `"code":"unauthenticated"`},
		{"REST POST /api/v1/scatters", http.MethodPost, "/api/v1/scatters", jsonHeader(""),
			func() *filler { return scatterBody(size) }, `an API key is needed`},
	} {
		t.Run(c.name, func(t *testing.T) {
			// A server of its own: what another case made the server
			// take from the system would hide what this one does.
			addr := freePort(t)
			srv, _ := startServer(t, addr, t.TempDir())
			url := "http://" + addr
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			var answers []answer
			before, peak := growth(t, pidOf(srv), func() {
				answers = together(callers, func(int) answer { return call(ctx, c.method, url+c.path, c.header, c.body(), false) })
			})
			t.Logf("%d callers without a key, %d MiB each: server memory %d MiB before, peak %d MiB (+%.1f MiB)",
				callers, size/mib, before/mib, peak/mib, float64(peak-before)/mib)
			for i, a := range answers {
				t.Logf("caller %d: %d in %v after sending %d KiB (%v) %s", i, a.status, a.took.Round(time.Millisecond), a.sent>>10, a.sendErr, a.body)
				if a.status != http.StatusUnauthorized || !strings.Contains(a.body, c.want) {
					t.Errorf("caller %d: %d %s (%v), want 401 with %s", i, a.status, a.body, a.sendErr, c.want)
				}
				if a.took > 10*time.Second {
					t.Errorf("caller %d was answered after %v: the server read its body first", i, a.took)
				}
			}
			if peak-before > bound {
				t.Errorf("the server's memory rose %.1f MiB with unauthenticated bodies, more than %d MiB", float64(peak-before)/mib, bound/mib)
			}
		})
	}
}

// TestOverLimitBodiesRefusedUnread: a caller with a valid key whose body
// is over its call's limit is refused (ResourceExhausted over Connect,
// 413 over REST): a declared length over the limit before any of the body
// is read, an undeclared one as soon as the limit is passed, not after
// the body is held whole.
func TestOverLimitBodiesRefusedUnread(t *testing.T) {
	t.Parallel()
	const bound = 32 * mib
	for _, tc := range []struct {
		name, path string
		header     func(key string) http.Header
		role       spool.Role // of the key sent
		body       *filler
		declared   bool
		want       string
	}{
		// 300 MB is over CreateScatter's 256 MiB.
		{"Connect CreateScatter, 300 MB declared", spoolv1connect.ScatterServiceCreateScatterProcedure, connectHeader, spool.RoleSubmit,
			procBody(300 * mib), true, `"code":"resource_exhausted"`},
		{"Connect EnqueueJob, 200 MB chunked", spoolv1connect.JobServiceEnqueueJobProcedure, connectHeader, spool.RoleSubmit,
			procBody(200 * mib), false, `"code":"resource_exhausted"`},
		{"REST POST /api/v1/scatters, 300 MB declared", "/api/v1/scatters", jsonHeader, spool.RoleSubmit,
			scatterBody(300 * mib), true, `over 268435456 bytes`},
		{"REST POST /api/v1/ingest/lines, 200 MB chunked", "/api/v1/ingest/lines", jsonHeader, spool.RoleIngest,
			newFiller(`{"source": "s", "id": "1", "timestamp": 1, "message": "`, 'a', 200*mib, `"}`), false, `ingest.max_body_bytes`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// A server of its own: what another case made the server
			// take from the system would hide what this one does.
			addr := freePort(t)
			srv, c := startServer(t, addr, t.TempDir())
			url := "http://" + addr
			_, key, err := c.CreateKey(context.Background(), client.KeyParams{Name: "caller", Role: tc.role})
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			var a answer
			before, peak := growth(t, pidOf(srv), func() { a = call(ctx, http.MethodPost, url+tc.path, tc.header(key), tc.body, tc.declared) })
			t.Logf("%d in %v after sending %d KiB (%v) %s; server memory %d MiB before, peak %d MiB (+%.1f MiB)",
				a.status, a.took.Round(time.Millisecond), a.sent>>10, a.sendErr, a.body, before/mib, peak/mib, float64(peak-before)/mib)
			want := http.StatusRequestEntityTooLarge
			if strings.HasPrefix(tc.path, "/spool.v1.") {
				want = http.StatusTooManyRequests // Connect's status for resource_exhausted
			}
			if a.status != want || !strings.Contains(a.body, tc.want) {
				t.Errorf("%d %s (%v), want %d with %s", a.status, a.body, a.sendErr, want, tc.want)
			}
			if peak-before > bound {
				t.Errorf("the server's memory rose %.1f MiB with a body over its limit, more than %d MiB", float64(peak-before)/mib, bound/mib)
			}
		})
	}
}

// bombRecord is a Firehose record whose data, base64 of gzip, opens a
// CloudWatch Logs message and then goes on for about a quarter of a GB of
// one message's text: a valid start, so that only its size can stop it.
// The gzip is a run of members, as gzip allows, each compressed once: one
// opening the message, the same MiB of text 250 times, one closing it.
// Compressing the quarter GB itself would take this test most of a minute.
func bombRecord(t *testing.T) string {
	t.Helper()
	member := func(data []byte) []byte {
		var gz bytes.Buffer
		w, err := gzip.NewWriterLevel(&gz, gzip.BestCompression)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = w.Write(data)
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		return gz.Bytes()
	}
	data := member([]byte(`{"messageType": "DATA_MESSAGE", "logGroup": "g", "logStream": "s", "logEvents": [{"id": "1", "timestamp": 1, "message": "`))
	data = append(data, bytes.Repeat(member(bytes.Repeat([]byte("a"), mib)), 250)...)
	data = append(data, member([]byte(`"}]}`))...)
	return base64.StdEncoding.EncodeToString(data)
}

// TestIngestBombsBounded: eight Firehose deliveries at once, each of 4 MB
// of records that decompress to gigabytes, sent with a valid ingest key,
// are each refused with 413 in Firehose's response format, and the server
// holds a bounded amount of memory meanwhile.
func TestIngestBombsBounded(t *testing.T) {
	t.Parallel()
	addr := freePort(t)
	srv, c := startServer(t, addr, t.TempDir())
	url := "http://" + addr
	_, key, err := c.CreateKey(context.Background(), client.KeyParams{Name: "firehose", Role: spool.RoleIngest})
	if err != nil {
		t.Fatal(err)
	}
	rec := bombRecord(t)
	var records []string
	for n := 0; n < 4*mib; n += len(rec) {
		records = append(records, `{"data": "`+rec+`"}`)
	}
	body := `{"requestId": "bomb", "timestamp": 1700000000000, "records": [` + strings.Join(records, ",") + `]}`
	t.Logf("each delivery: %d records of %d KiB, %.1f MiB", len(records), len(rec)>>10, float64(len(body))/mib)
	const deliveries, bound = 8, 128 * mib
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	header := http.Header{"Content-Type": {"application/json"}, "X-Amz-Firehose-Access-Key": {key}, "X-Amz-Firehose-Request-Id": {"bomb"}}
	var answers []answer
	before, peak := growth(t, pidOf(srv), func() {
		answers = together(deliveries, func(int) answer {
			return call(ctx, http.MethodPost, url+"/api/v1/ingest/firehose", header, newFiller(body, 0, 0, ""), true)
		})
	})
	t.Logf("%d bombs at once: server memory %d MiB before, peak %d MiB (+%.1f MiB)", deliveries, before/mib, peak/mib, float64(peak-before)/mib)
	for i, a := range answers {
		t.Logf("delivery %d: %d in %v: %s", i, a.status, a.took.Round(time.Millisecond), a.body)
		var r struct {
			RequestID    string `json:"requestId"`
			Timestamp    int64  `json:"timestamp"`
			ErrorMessage string `json:"errorMessage"`
		}
		if err := json.Unmarshal([]byte(a.body), &r); err != nil || a.status != http.StatusRequestEntityTooLarge ||
			r.RequestID != "bomb" || r.Timestamp == 0 || !strings.Contains(r.ErrorMessage, "ingest.max_decoded_bytes") {
			t.Errorf("delivery %d: %d %s (%v), want 413 in Firehose's format naming ingest.max_decoded_bytes", i, a.status, a.body, a.sendErr)
		}
	}
	if peak-before > bound {
		t.Errorf("the server's memory rose %.1f MiB with %d bombs, more than %d MiB", float64(peak-before)/mib, deliveries, bound/mib)
	}
}

// TestIngestDecodingBoundServerWide: deliveries that each decode to
// nearly the most one may (a few KiB sent, 15 MiB of events once
// decompressed) are decoded a budget's worth at a time
// (ingest.max_decoding_bytes), not all at once: eight of them sent
// together are all stored, and the server holds about one's worth.
func TestIngestDecodingBoundServerWide(t *testing.T) {
	t.Parallel()
	const budget = 16 * mib
	addr := freePort(t)
	srv, c := startServerEnv(t, addr, t.TempDir(), []string{
		"SPOOL_INGEST_MAX_DECODED_BYTES=" + strconv.Itoa(budget), "SPOOL_INGEST_MAX_DECODING_BYTES=" + strconv.Itoa(budget)})
	url := "http://" + addr
	_, key, err := c.CreateKey(context.Background(), client.KeyParams{Name: "firehose", Role: spool.RoleIngest})
	if err != nil {
		t.Fatal(err)
	}
	// Fifteen records of one event each, a MiB of text, all with the same
	// id: everything is decoded, and the store keeps one event.
	message := strings.Repeat("a", mib-1)
	var records []string
	for range 15 {
		records = append(records, `{"data": "`+ingesttest.Record(ingesttest.DataMessage("g", "s", ingesttest.Event{ID: "1", Timestamp: 1700000000000, Message: message}))+`"}`)
	}
	body := `{"requestId": "big", "timestamp": 1700000000000, "records": [` + strings.Join(records, ",") + `]}`
	const deliveries, bound = 8, 4 * budget
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	header := http.Header{"Content-Type": {"application/json"}, "X-Amz-Firehose-Access-Key": {key}}
	var answers []answer
	before, peak := growth(t, pidOf(srv), func() {
		answers = together(deliveries, func(int) answer {
			return call(ctx, http.MethodPost, url+"/api/v1/ingest/firehose", header, newFiller(body, 0, 0, ""), true)
		})
	})
	t.Logf("%d deliveries of %d KiB, each decoding to 15 MiB, at once: server memory %d MiB before, peak %d MiB (+%.1f MiB)",
		deliveries, len(body)>>10, before/mib, peak/mib, float64(peak-before)/mib)
	for i, a := range answers {
		if a.status != http.StatusOK {
			t.Errorf("delivery %d: %d %s (%v)", i, a.status, a.body, a.sendErr)
		}
	}
	if peak-before > bound {
		t.Errorf("the server's memory rose %.1f MiB decoding %d deliveries at once, more than %d MiB", float64(peak-before)/mib, deliveries, bound/mib)
	}
}
