package httpapi_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/spool-run/spool"
	"github.com/spool-run/spool/internal/httpapi"
	"github.com/spool-run/spool/internal/ingest/ingesttest"
	"github.com/spool-run/spool/internal/jobjson"
	"github.com/spool-run/spool/server"
	"github.com/spool-run/spool/spooltest"
)

// send posts body to path with the given headers and returns the status and
// the answer's body.
func send(t *testing.T, srv *spooltest.Server, path string, hdr http.Header, body io.Reader) (int, []byte) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, srv.URL+path, body)
	if err != nil {
		t.Fatal(err)
	}
	req.Header = hdr
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, data
}

func firehoseHeaders(key, requestID string) http.Header {
	return http.Header{"X-Amz-Firehose-Access-Key": {key}, "X-Amz-Firehose-Request-Id": {requestID}, "Content-Type": {"application/json"}}
}

type firehoseAnswer struct {
	RequestID    string `json:"requestId"`
	Timestamp    int64  `json:"timestamp"`
	ErrorMessage string `json:"errorMessage"`
}

func decodeAnswer(t *testing.T, data []byte) firehoseAnswer {
	t.Helper()
	var a firehoseAnswer
	if err := json.Unmarshal(data, &a); err != nil {
		t.Fatalf("answer %q is not Firehose's JSON: %v", data, err)
	}
	return a
}

// jobsOf lists the jobs of source through the REST API.
func jobsOf(t *testing.T, e *env, source string) []jobjson.Job {
	t.Helper()
	var l jobjson.List
	if resp := e.get(t, "/api/v1/jobs?source="+url.QueryEscape(source), &l); resp.StatusCode != http.StatusOK {
		t.Fatalf("listing source %q: %s", source, resp.Status)
	}
	return l.Jobs
}

func smallBodies(c *server.Config) { c.Ingest.MaxBodyBytes = 4096 }

// TestFirehoseAnswers: Firehose is answered in its own terms, with its
// request id, whatever happens; a request refused for any reason stores
// nothing of it.
func TestFirehoseAnswers(t *testing.T) {
	t.Parallel()
	srv := spooltest.NewServer(t, spooltest.Config{Server: smallBodies})
	e := &env{srv: srv, c: srv.Client()}
	key := srv.Key(t, spool.RoleIngest)
	good := ingesttest.Record(ingesttest.DataMessage("/ecs/web", "web/1", ingesttest.Event{ID: "1", Timestamp: 1_700_000_000_000, Message: "GET / 200"}))
	other := ingesttest.Record(ingesttest.DataMessage("/ecs/web", "web/2", ingesttest.Event{ID: "1", Timestamp: 1_700_000_000_000, Message: "GET / 500"}))
	before := time.Now().UnixMilli()

	code, data := send(t, srv, "/api/v1/ingest/firehose", firehoseHeaders(key, "from-header"), bytes.NewReader(ingesttest.FirehoseBody("from-body", 1, good)))
	if a := decodeAnswer(t, data); code != http.StatusOK || a.RequestID != "from-body" || a.ErrorMessage != "" || a.Timestamp < before {
		t.Fatalf("good delivery: %d %+v", code, a)
	}
	if jobs := jobsOf(t, e, "/ecs/web:web/1"); len(jobs) != 1 || jobs[0].Kind != "external" || jobs[0].Source != "/ecs/web:web/1" || jobs[0].LineCount != 1 {
		t.Fatalf("the stream's jobs: %+v", jobs)
	}
	// Firehose's GZIP content encoding.
	hdr := firehoseHeaders(key, "gz")
	hdr.Set("Content-Encoding", "gzip")
	gz := ingesttest.Gzip(ingesttest.FirehoseBody("gz", 1, other))
	if code, data := send(t, srv, "/api/v1/ingest/firehose", hdr, bytes.NewReader(gz)); code != http.StatusOK {
		t.Fatalf("gzip-encoded delivery: %d %s", code, data)
	}

	refused := []struct {
		name    string
		hdr     http.Header
		body    []byte
		status  int
		message string
	}{
		// A refused key is said in Firehose's terms: its access key.
		{"no key", http.Header{"X-Amz-Firehose-Request-Id": {"r1"}}, ingesttest.FirehoseBody("r1", 1, good), http.StatusUnauthorized,
			"the delivery came with no access key: set the access key of the stream's HTTP endpoint destination to a spool key of role ingest (spool keys create --role ingest --name firehose prints one)"},
		{"unknown key", firehoseHeaders("spool_not-a-key", "r2"), ingesttest.FirehoseBody("r2", 1, good), http.StatusUnauthorized,
			"the access key is not a key of this spool server (mistyped, revoked, or another server's): set the access key of the stream's HTTP endpoint destination to a spool key of role ingest"},
		{"read key", firehoseHeaders(srv.Key(t, spool.RoleRead), "r3"), ingesttest.FirehoseBody("r3", 1, good), http.StatusForbidden,
			"the access key is a spool key whose role may not send logs: set the access key of the stream's HTTP endpoint destination"},
		{"bad base64 in the second record", firehoseHeaders(key, "r4"), ingesttest.FirehoseBody("r4", 1, other, "%%%"), http.StatusBadRequest, "record 1"},
		{"not gzip", firehoseHeaders(key, "r5"), ingesttest.FirehoseBody("r5", 1, other, "aGVsbG8="), http.StatusBadRequest, "record 1"},
		{"not JSON", firehoseHeaders(key, "r6"), []byte(`{"requestId": "r6", "records": [`), http.StatusBadRequest, "nothing of this delivery was stored"},
		{"over the limit", firehoseHeaders(key, "r7"), ingesttest.FirehoseBody("r7", 1, other, strings.Repeat("A", 5000)), http.StatusRequestEntityTooLarge, "4096"},
	}
	for _, tc := range refused {
		code, data := send(t, srv, "/api/v1/ingest/firehose", tc.hdr, bytes.NewReader(tc.body))
		a := decodeAnswer(t, data)
		if code != tc.status || a.RequestID != tc.hdr.Get("X-Amz-Firehose-Request-Id") || !strings.Contains(a.ErrorMessage, tc.message) {
			t.Errorf("%s: %d %+v; want %d, the request id and an error saying %q", tc.name, code, a, tc.status, tc.message)
		}
	}
	// None of the refused requests stored web/2's event a second time, or
	// anything else.
	if jobs := jobsOf(t, e, "/ecs/web:web/2"); len(jobs) != 1 || jobs[0].LineCount != 1 {
		t.Fatalf("after refused deliveries web/2 has %+v, want its one line", jobs)
	}
	hdr = firehoseHeaders(key, "r8")
	hdr.Set("Content-Encoding", "br")
	if code, data := send(t, srv, "/api/v1/ingest/firehose", hdr, bytes.NewReader(ingesttest.FirehoseBody("r8", 1, good))); code != http.StatusUnsupportedMediaType {
		t.Fatalf("Content-Encoding br: %d %s", code, data)
	}
	hdr = firehoseHeaders(key, "r9")
	hdr.Set("Content-Encoding", "gzip")
	if code, data := send(t, srv, "/api/v1/ingest/firehose", hdr, strings.NewReader("not gzip")); code != http.StatusBadRequest || !strings.Contains(decodeAnswer(t, data).ErrorMessage, "not gzip data") {
		t.Fatalf("a body that is not gzip: %d %s", code, data)
	}
}

// TestIngestLinesAndComplete: shippers' lines are answered with what was
// stored; a bad line refuses the body; a source is ended over REST.
func TestIngestLinesAndComplete(t *testing.T) {
	t.Parallel()
	srv := spooltest.NewServer(t, spooltest.Config{Server: smallBodies})
	e := &env{srv: srv, c: srv.Client()}
	key := srv.Key(t, spool.RoleIngest)
	bearer := http.Header{"Authorization": {"Bearer " + key}}
	body := ingesttest.Lines(
		ingesttest.Line{Source: "api", ID: "2", Timestamp: 2, Message: "second"},
		ingesttest.Line{Source: "worker", ID: "1", Timestamp: 1, Message: "w"},
		ingesttest.Line{Source: "api", ID: "1", Timestamp: 1, Message: "first\n"},
		ingesttest.Line{Source: "api", ID: "2", Timestamp: 2, Message: "second"})
	code, data := send(t, srv, "/api/v1/ingest/lines", bearer, bytes.NewReader(body))
	const want = `{"events":4,"accepted":3,"duplicates":1,"sources":[{"source":"api","job_id":"%s","accepted":2,"opened":true},{"source":"worker","job_id":"%s","accepted":1,"opened":true}]}`
	api, wrk := jobsOf(t, e, "api"), jobsOf(t, e, "worker")
	if len(api) != 1 || len(wrk) != 1 {
		t.Fatalf("jobs of api %v, of worker %v", api, wrk)
	}
	if got := strings.TrimSpace(string(data)); code != http.StatusOK || got != fmt.Sprintf(want, api[0].JobID, wrk[0].JobID) {
		t.Fatalf("lines answered %d %s", code, got)
	}
	var page httpapi.LogPage
	e.get(t, "/api/v1/jobs/"+api[0].JobID+"/logs", &page)
	if len(page.Events) != 2 || page.Events[0].Text != "second" || page.Events[1].Text != "first" || page.Events[1].Timestamp != 1 {
		t.Fatalf("api's log: %+v; want its lines in the order first accepted, at their events' times", page.Events)
	}

	bad := append(ingesttest.Lines(ingesttest.Line{Source: "api", ID: "3", Timestamp: 3, Message: "third"}), []byte(`{"source": "api", "id": "4"}`+"\n")...)
	if code, data := send(t, srv, "/api/v1/ingest/lines", bearer, bytes.NewReader(bad)); code != http.StatusBadRequest || !strings.Contains(string(data), "line 2") {
		t.Fatalf("a body with a bad second line: %d %s", code, data)
	}
	big := ingesttest.Lines(ingesttest.Line{Source: "api", ID: "5", Timestamp: 5, Message: strings.Repeat("x", 5000)})
	if code, data := send(t, srv, "/api/v1/ingest/lines", bearer, bytes.NewReader(big)); code != http.StatusRequestEntityTooLarge {
		t.Fatalf("a body over the limit: %d %s", code, data)
	}
	// A key refused is said in a shipper's terms: the header of its sink.
	readKey := http.Header{"Authorization": {"Bearer " + srv.Key(t, spool.RoleRead)}}
	if code, data := send(t, srv, "/api/v1/ingest/lines", readKey, bytes.NewReader(body)); code != http.StatusForbidden ||
		!strings.Contains(string(data), "the key is a spool key whose role may not send logs: set the HTTP sink's header to Authorization: Bearer KEY, with a spool key of role ingest") {
		t.Fatalf("a read key sending lines: %d %s", code, data)
	}
	if jobs := jobsOf(t, e, "api"); jobs[0].LineCount != 2 {
		t.Fatalf("refused bodies stored lines: api has %d", jobs[0].LineCount)
	}

	complete := func(body string, hdr http.Header) (int, []byte) {
		h := http.Header{"Authorization": {"Bearer " + key}, "Content-Type": {"application/json"}}
		for k, v := range hdr {
			h[k] = v
		}
		return send(t, srv, "/api/v1/ingest/complete", h, strings.NewReader(body))
	}
	if code, data := complete(`{"source": "api"}`, http.Header{"Origin": {"https://evil.example"}}); code != http.StatusForbidden {
		t.Fatalf("complete from another site's page: %d %s", code, data)
	}
	code, data = complete(`{"source": "api"}`, nil)
	var done jobjson.Job
	if err := json.Unmarshal(data, &done); err != nil || code != http.StatusOK || done.State != "succeeded" || done.JobID != api[0].JobID {
		t.Fatalf("complete: %d %s", code, data)
	}
	for body, status := range map[string]int{
		`{"source": "api"}`:                     http.StatusNotFound,
		`{"source": "nobody"}`:                  http.StatusNotFound,
		`{}`:                                    http.StatusBadRequest,
		`{"source": "worker", "job_id": "x"}`:   http.StatusBadRequest,
		`{"sauce": "worker"}`:                   http.StatusBadRequest,
		`{"job_id": "` + wrk[0].JobID + `"}`:    http.StatusOK,
		`{"job_id": "` + wrk[0].JobID + `"} {}`: http.StatusBadRequest,
	} {
		if code, data := complete(body, nil); code != status {
			t.Errorf("complete %s: %d %s, want %d", body, code, data, status)
		}
	}
}
