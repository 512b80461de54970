package assembly_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"connectrpc.com/connect"
	"connectrpc.com/grpcreflect"
	"github.com/coder/websocket"

	"github.com/spool-run/spool"
	spoolv1 "github.com/spool-run/spool/gen/spool/v1"
	"github.com/spool-run/spool/gen/spool/v1/spoolv1connect"
)

// The key may be sent with the Bearer scheme named in any case and with
// any spaces around it, as HTTP allows; another scheme is no key.
func TestBearerSchemeAnyCase(t *testing.T) {
	t.Parallel()
	srv := start(t)
	for header, want := range map[string]int{
		"Bearer " + srv.AdminKey:          http.StatusOK,
		"bearer " + srv.AdminKey:          http.StatusOK,
		"BEARER " + srv.AdminKey:          http.StatusOK,
		"Bearer   " + srv.AdminKey:        http.StatusOK,
		"  bEaReR\t" + srv.AdminKey + " ": http.StatusOK,
		"Basic " + srv.AdminKey:           http.StatusUnauthorized,
		"Bearer" + srv.AdminKey:           http.StatusUnauthorized,
		"Bearer " + srv.AdminKey + " x":   http.StatusUnauthorized,
	} {
		resp, body := request(t, srv, http.MethodGet, "/api/v1/jobs", "", map[string]string{"Authorization": header})
		if resp.StatusCode != want {
			t.Errorf("Authorization: %q: %s %s, want %d", strings.Replace(header, srv.AdminKey, "KEY", 1), resp.Status, body, want)
		}
	}
}

// h2c is an HTTP client that speaks HTTP/2 without TLS, as gRPC needs.
func h2c() *http.Client {
	p := new(http.Protocols)
	p.SetUnencryptedHTTP2(true)
	return &http.Client{Transport: &http.Transport{Protocols: p}}
}

// A call without a key is refused at the door in the terms of the
// protocol it was made in: Connect clients, gRPC and gRPC-Web clients
// alike read Unauthenticated and the reason, for unary calls and streams.
func TestDoorRefusesInEachProtocol(t *testing.T) {
	t.Parallel()
	srv := start(t)
	ctx := context.Background()
	for name, c := range map[string]spoolv1connect.JobServiceClient{
		"connect":  spoolv1connect.NewJobServiceClient(http.DefaultClient, srv.URL),
		"grpc":     spoolv1connect.NewJobServiceClient(h2c(), srv.URL, connect.WithGRPC()),
		"grpc-web": spoolv1connect.NewJobServiceClient(http.DefaultClient, srv.URL, connect.WithGRPCWeb()),
	} {
		_, err := c.ListJobs(ctx, connect.NewRequest(&spoolv1.ListJobsRequest{}))
		if connect.CodeOf(err) != connect.CodeUnauthenticated || !strings.Contains(err.Error(), "an API key is needed") {
			t.Errorf("%s ListJobs without a key: %v", name, err)
		}
		s, err := c.StreamEvents(ctx, connect.NewRequest(&spoolv1.StreamEventsRequest{JobId: "x"}))
		if err == nil {
			for s.Receive() {
			}
			err = s.Err()
			s.Close()
		}
		if connect.CodeOf(err) != connect.CodeUnauthenticated || !strings.Contains(err.Error(), "an API key is needed") {
			t.Errorf("%s StreamEvents without a key: %v", name, err)
		}
	}
}

// Over HTTP, a request without a key is refused with a JSON error and a
// challenge; Firehose's route answers as Firehose reads it, with the
// request's id.
func TestDoorRefusesOverHTTP(t *testing.T) {
	t.Parallel()
	srv := start(t)
	resp, body := request(t, srv, http.MethodPost, "/api/v1/scatters", `{"batches": [[1]]}`, nil)
	var e struct{ Error string }
	if resp.StatusCode != http.StatusUnauthorized || resp.Header.Get("WWW-Authenticate") == "" ||
		json.Unmarshal([]byte(body), &e) != nil || !strings.Contains(e.Error, "an API key is needed") {
		t.Errorf("REST without a key: %s %v %s", resp.Status, resp.Header, body)
	}

	resp, body = request(t, srv, http.MethodPost, "/api/v1/ingest/firehose", `{}`,
		map[string]string{"X-Amz-Firehose-Request-Id": "r-42", "X-Amz-Firehose-Access-Key": "spool_not-a-key"})
	var f struct {
		RequestID    string `json:"requestId"`
		Timestamp    int64  `json:"timestamp"`
		ErrorMessage string `json:"errorMessage"`
	}
	if resp.StatusCode != http.StatusUnauthorized || json.Unmarshal([]byte(body), &f) != nil ||
		f.RequestID != "r-42" || f.Timestamp == 0 || !strings.Contains(f.ErrorMessage, "the access key is not a key of this spool server") {
		t.Errorf("Firehose with an unknown key: %s %s", resp.Status, body)
	}

	// A log shipper's token is in its configuration: the refusal says
	// where, not SPOOL_API_KEY.
	resp, body = request(t, srv, http.MethodPost, "/api/v1/ingest/lines", "{}\n", nil)
	if resp.StatusCode != http.StatusUnauthorized || json.Unmarshal([]byte(body), &e) != nil ||
		!strings.Contains(e.Error, "the request came with no key: set the HTTP sink's header to Authorization: Bearer KEY") || strings.Contains(e.Error, "SPOOL_API_KEY") {
		t.Errorf("a log shipper without a key: %s %s", resp.Status, body)
	}
}

// What must be reachable without a key is: the web UI's pages, the login
// (whose body is the key), /healthz, /readyz and the OpenAPI document.
func TestDoorOpenRoutes(t *testing.T) {
	t.Parallel()
	srv := start(t)
	for _, r := range []struct{ method, path, body string }{
		{http.MethodGet, "/", ""},
		{http.MethodGet, "/jobs/x", ""},
		{http.MethodGet, "/assets/app.css", ""},
		{http.MethodGet, "/healthz", ""},
		{http.MethodGet, "/readyz", ""},
		{http.MethodGet, "/api/v1/openapi.yaml", ""},
		{http.MethodPost, "/api/v1/session", `{"key": "` + srv.AdminKey + `"}`},
		{http.MethodDelete, "/api/v1/session", ""},
	} {
		resp, body := request(t, srv, r.method, r.path, r.body, map[string]string{"Content-Type": "application/json"})
		if resp.StatusCode/100 != 2 {
			t.Errorf("%s %s without a key: %s %.200s", r.method, r.path, resp.Status, body)
		}
	}
	// A path that no route serves is the API's, and needs a key like
	// any other.
	resp, err := http.Post(srv.URL+"/api/v1/nothing", "application/json", strings.NewReader("{}"))
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("POST /api/v1/nothing without a key: %s", resp.Status)
	}
}

// A log WebSocket is refused at the door, before the upgrade, without a
// key, with a ticket that is not one, and with a key that is not known.
func TestDoorRefusesWebSocket(t *testing.T) {
	t.Parallel()
	srv := start(t)
	ws := strings.Replace(srv.URL, "http", "ws", 1) + "/api/v1/jobs/x/logs/ws"
	for name, c := range map[string]struct {
		query  string
		header http.Header
	}{
		"no credentials":  {"", nil},
		"a forged ticket": {"?ticket=st1.forged", nil},
		"an unknown key":  {"", http.Header{"Authorization": {"Bearer spool_not-a-key"}}},
	} {
		conn, resp, err := websocket.Dial(context.Background(), ws+c.query, &websocket.DialOptions{HTTPHeader: c.header})
		if err == nil {
			conn.CloseNow()
		}
		if resp == nil || resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("%s: %v %v, want 401", name, resp, err)
		}
	}
}

// gRPC reflection, which lists every call, is no open route either: it
// takes any valid key.
func TestDoorReflectionNeedsAKey(t *testing.T) {
	t.Parallel()
	srv := start(t)
	for _, key := range []string{"", srv.Key(t, spool.RoleIngest)} {
		client := grpcreflect.NewClient(h2c(), srv.URL, connect.WithGRPC())
		stream := client.NewStream(context.Background(), grpcreflect.WithRequestHeaders(http.Header{"Authorization": {"Bearer " + key}}))
		names, err := stream.ListServices()
		_, _ = stream.Close()
		switch {
		case key == "" && connect.CodeOf(err) != connect.CodeUnauthenticated:
			t.Errorf("reflection without a key: %v %v", names, err)
		case key != "" && (err != nil || len(names) == 0):
			t.Errorf("reflection with a key: %v %v", names, err)
		}
	}
}
