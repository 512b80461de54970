package httpapi_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/spool-run/spool/client"
	"github.com/spool-run/spool/internal/httpapi"
	"github.com/spool-run/spool/spooltest"
)

// env is a real spool server (which mounts the API) and a client for it.
type env struct {
	srv *spooltest.Server
	c   *client.Client
}

func start(t *testing.T) *env {
	t.Helper()
	s := spooltest.NewServer(t)
	return &env{srv: s, c: s.Client()}
}

// running submits a job and leases it as its worker, which has started it.
func (e *env) running(t *testing.T) *spooltest.Lease {
	t.Helper()
	return e.runningFor(t, t)
}

// runningFor is running with the lease's failures reported to tb.
func (e *env) runningFor(t *testing.T, tb testing.TB) *spooltest.Lease {
	t.Helper()
	if _, _, err := e.c.Submit(context.Background(), client.SubmitParams{Argv: []string{"seq", "1", "10000"}}); err != nil {
		t.Fatal(err)
	}
	l := spooltest.LeaseJob(tb, e.srv, "")
	l.Begin()
	return l
}

// writeLines writes lines from..to as l's worker in chunks, then ends the
// job with exit code 0.
func writeLines(l *spooltest.Lease, from, to, chunk int) {
	for i := from; i <= to; i += chunk {
		l.Write(spooltest.Seq(i, min(i+chunk-1, to))...)
	}
	l.End(0)
}

// writingJob submits a job and writes lines from..to as its worker, in
// chunks, on a goroutine, then ends it with exit code 0. The returned
// channel closes when it is done. The lease reports its failures as the
// writer's, with Errorf.
func (e *env) writingJob(t *testing.T, from, to, chunk int) (*spooltest.Lease, <-chan struct{}) {
	t.Helper()
	l := e.runningFor(t, writer{t})
	done := make(chan struct{})
	go func() {
		defer close(done)
		writeLines(l, from, to, chunk)
	}()
	return l, done
}

// writer is a test as seen from a goroutine that writes for it: a failure
// is reported with Errorf, which any goroutine may call, and ends that
// goroutine (t.Fatal may end only the test's own).
type writer struct{ testing.TB }

func (w writer) Fatal(args ...any) {
	w.Helper()
	w.Error(args...)
	runtime.Goexit()
}

func (w writer) Fatalf(format string, args ...any) {
	w.Helper()
	w.Errorf(format, args...)
	runtime.Goexit()
}

func (w writer) FailNow() {
	w.Fail()
	runtime.Goexit()
}

// get fetches path from the server and decodes its JSON body into out.
func (e *env) get(t *testing.T, path string, out any) *http.Response {
	t.Helper()
	return e.do(t, http.MethodGet, e.srv.URL+path, nil, out)
}

// do makes a request with the server's admin key (unless hdr has an
// Authorization of its own) and decodes its JSON body into out.
func (e *env) do(t *testing.T, method, u string, hdr http.Header, out any) *http.Response {
	t.Helper()
	req, err := http.NewRequest(method, u, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+e.srv.AdminKey)
	for k, v := range hdr {
		req.Header[k] = v
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if err := jsonDecode(resp, out); err != nil {
		t.Fatalf("%s %s: %v", method, u, err)
	}
	return resp
}

// jsonDecode decodes resp's body into out (if not nil).
func jsonDecode(resp *http.Response, out any) error {
	if out == nil {
		return nil
	}
	if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
		return fmt.Errorf("decoding the %s response: %v", resp.Status, err)
	}
	return nil
}

// wsURL is the WebSocket log stream of job on base (http://host:port).
func wsURL(base, jobID string, lastLine int64) string {
	return strings.Replace(base, "http", "ws", 1) + "/api/v1/jobs/" + url.PathEscape(jobID) + "/logs/ws?last_line=" + strconv.FormatInt(lastLine, 10)
}

// dial opens a WebSocket with the server's admin key.
func (e *env) dial(ctx context.Context, t testing.TB, u string, opts *websocket.DialOptions) *websocket.Conn {
	t.Helper()
	if opts == nil {
		opts = &websocket.DialOptions{}
	}
	if opts.HTTPHeader == nil {
		opts.HTTPHeader = http.Header{}
	}
	opts.HTTPHeader.Set("Authorization", "Bearer "+e.srv.AdminKey)
	c, _, err := websocket.Dial(ctx, u, opts)
	if err != nil {
		t.Fatalf("dial %s: %v", u, err)
	}
	c.SetReadLimit(4 << 20)
	return c
}

// message is either kind of message the stream sends.
type message struct {
	Type  string         `json:"type"`
	Lines []httpapi.Line `json:"lines"`
	httpapi.EndMessage
}

// follow reads c until it closes, giving each line to onLine (which stops
// the reading by returning false). It returns the end message, if one came,
// and the close status.
func follow(ctx context.Context, c *websocket.Conn, onLine func(httpapi.Line) bool) (*httpapi.EndMessage, websocket.StatusCode, error) {
	var end *httpapi.EndMessage
	for {
		_, data, err := c.Read(ctx)
		if err != nil {
			if st := websocket.CloseStatus(err); st != -1 {
				return end, st, nil
			}
			return end, -1, err
		}
		var m message
		if err := json.Unmarshal(data, &m); err != nil {
			return end, -1, fmt.Errorf("message %q is not JSON: %v", data, err)
		}
		switch m.Type {
		case "lines":
			if end != nil {
				return end, -1, fmt.Errorf("lines after the end message")
			}
			for _, l := range m.Lines {
				if !onLine(l) {
					return end, -1, nil
				}
			}
		case "end":
			e := m.EndMessage
			e.Type = m.Type
			end = &e
		default:
			return end, -1, fmt.Errorf("unknown message type %q", m.Type)
		}
	}
}

// sequence checks that lines come in order, each once, each the text of
// its number (as spooltest.Seq writes them).
type sequence struct {
	next int64
}

func (s *sequence) add(l httpapi.Line) error {
	if l.LineNumber != s.next {
		return fmt.Errorf("got line %d, want %d", l.LineNumber, s.next)
	}
	if l.Text != strconv.FormatInt(l.LineNumber, 10) {
		return fmt.Errorf("line %d is %q", l.LineNumber, l.Text)
	}
	s.next++
	return nil
}

// within returns a context for one test step.
func within(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

func isClosed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

func errorf(format string, args ...any) error { return fmt.Errorf(format, args...) }
