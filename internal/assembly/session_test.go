package assembly_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"connectrpc.com/connect"
	"github.com/coder/websocket"

	"github.com/spool-run/spool"
	"github.com/spool-run/spool/client"
	spoolv1 "github.com/spool-run/spool/gen/spool/v1"
	"github.com/spool-run/spool/internal/assembly"
	"github.com/spool-run/spool/internal/config"
	"github.com/spool-run/spool/internal/events"
	"github.com/spool-run/spool/internal/httpapi"
	"github.com/spool-run/spool/internal/safebuf"
	"github.com/spool-run/spool/internal/service"
	"github.com/spool-run/spool/internal/store/backends/pgstore/pgtest"
	"github.com/spool-run/spool/internal/token"
	"github.com/spool-run/spool/internal/wire"
	"github.com/spool-run/spool/server"
	"github.com/spool-run/spool/spooltest"
)

// testTokenKey signs the tokens of the servers of these tests, so a test
// can sign one of its own (an expired ticket) and two servers can share it.
var testTokenKey = []byte("0123456789abcdef0123456789abcdef")

// withTokenKey gives a server testTokenKey.
func withTokenKey(c *server.Config) {
	c.Server.TokenKey = base64.StdEncoding.EncodeToString(testTokenKey)
}

// askTicket asks srv, with key, for a ticket to jobID's log stream.
func askTicket(t *testing.T, url, key, jobID string) string {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, url+"/api/v1/session/ticket?job_id="+jobID, nil)
	req.Header.Set("Authorization", "Bearer "+key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var tk httpapi.Ticket
	if err := json.NewDecoder(resp.Body).Decode(&tk); resp.StatusCode != http.StatusOK || err != nil || tk.Ticket == "" || tk.JobID != jobID {
		t.Fatalf("ticket for %s: %s %+v %v", jobID, resp.Status, tk, err)
	}
	return tk.Ticket
}

// openLog opens jobID's log WebSocket on url with query and headers. It
// returns the connection, or the refusal's status and body.
func openLog(t *testing.T, url, jobID, query string, hdr http.Header) (*websocket.Conn, int, string) {
	t.Helper()
	u := strings.Replace(url, "http", "ws", 1) + "/api/v1/jobs/" + jobID + "/logs/ws" + query
	conn, resp, err := websocket.Dial(context.Background(), u, &websocket.DialOptions{HTTPHeader: hdr})
	if err == nil {
		t.Cleanup(func() { conn.CloseNow() })
		return conn, http.StatusSwitchingProtocols, ""
	}
	if resp == nil {
		t.Fatalf("websocket: %v", err)
	}
	body, _ := io.ReadAll(resp.Body)
	return nil, resp.StatusCode, string(body)
}

// closing is how a log WebSocket ended, and when.
type closing struct {
	code   websocket.StatusCode
	reason string
	at     time.Time
}

// readToClose reads c until it closes, on a goroutine.
func readToClose(c *websocket.Conn) <-chan closing {
	ch := make(chan closing, 1)
	go func() {
		for {
			if _, _, err := c.Read(context.Background()); err != nil {
				var ce websocket.CloseError
				if !errors.As(err, &ce) {
					ce.Code = -1
				}
				ch <- closing{code: ce.Code, reason: ce.Reason, at: time.Now()}
				return
			}
		}
	}()
	return ch
}

// TestTicketOpensOneLogStreamOnce: a ticket names the job whose log
// stream it opens, and opens it once; as a session cookie, on another
// job's stream, on any other route, expired or forged, it is refused.
func TestTicketOpensOneLogStreamOnce(t *testing.T) {
	t.Parallel()
	srv := start(t, withTokenKey)
	job := spooltest.RunJob(t, srv, spooltest.Seq(1, 3)...)
	other := spooltest.RunJob(t, srv, spooltest.Seq(1, 3)...)
	id := job.ID

	resp, body := request(t, srv, http.MethodPost, "/api/v1/session/ticket", "", map[string]string{"Authorization": "Bearer " + srv.AdminKey})
	if resp.StatusCode != http.StatusBadRequest || !strings.Contains(body, "job_id") {
		t.Errorf("a ticket for no job: %s %s", resp.Status, body)
	}

	// As the session cookie, a ticket neither enqueues nor reads.
	cookie := service.SessionCookie + "=" + askTicket(t, srv.URL, srv.AdminKey, id)
	resp, body = request(t, srv, http.MethodPost, "/spool.v1.JobService/EnqueueJob", `{"params":{"argv":["true"]}}`,
		map[string]string{"Cookie": cookie, "Content-Type": "application/json"})
	if resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("EnqueueJob with a ticket as the cookie: %s %s", resp.Status, body)
	}
	if resp, body := request(t, srv, http.MethodGet, "/api/v1/jobs/"+id, "", map[string]string{"Cookie": cookie}); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("GET job with a ticket as the cookie: %s %s", resp.Status, body)
	}
	if _, status, body := openLog(t, srv.URL, id, "", http.Header{"Cookie": {cookie}}); status != http.StatusUnauthorized {
		t.Errorf("the log stream with a ticket as the cookie: %d %s", status, body)
	}
	// On another route, even one that reads the same job's log, or
	// another job's stream.
	for _, path := range []string{"/api/v1/jobs/" + id + "/logs", "/api/v1/jobs/" + id + "/logs/raw", "/api/v1/jobs"} {
		tk := askTicket(t, srv.URL, srv.AdminKey, id)
		resp, body := request(t, srv, http.MethodGet, path+"?ticket="+tk, "", map[string]string{"Upgrade": "websocket", "Connection": "Upgrade"})
		if resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("GET %s with a ticket: %s %s", path, resp.Status, body)
		}
	}
	if _, status, body := openLog(t, srv.URL, other.ID, "?ticket="+askTicket(t, srv.URL, srv.AdminKey, id), nil); status != http.StatusUnauthorized ||
		!strings.Contains(body, "opens the log stream of job "+id) {
		t.Errorf("another job's stream with a ticket: %d %s", status, body)
	}

	// Its own stream: once.
	tk := askTicket(t, srv.URL, srv.AdminKey, id)
	conn, status, body := openLog(t, srv.URL, id, "?ticket="+tk, nil)
	if status != http.StatusSwitchingProtocols {
		t.Fatalf("the job's stream with its ticket: %d %s", status, body)
	}
	if c := <-readToClose(conn); c.code != websocket.StatusNormalClosure {
		t.Errorf("the ticket's stream ended with %d %q", c.code, c.reason)
	}
	if _, status, body := openLog(t, srv.URL, id, "?ticket="+tk, nil); status != http.StatusUnauthorized || !strings.Contains(body, "was used already") {
		t.Errorf("the ticket a second time: %d %s", status, body)
	}

	// Expired, or signed by another key.
	signer, _ := token.NewSigner(testTokenKey)
	expired := signer.SignTicket(token.Ticket{KeyHash: service.HashKey(srv.AdminKey), JobID: id, ID: "old", Expires: time.Now().Add(-time.Second).Unix()})
	if _, status, body := openLog(t, srv.URL, id, "?ticket="+expired, nil); status != http.StatusUnauthorized || !strings.Contains(body, "has expired") {
		t.Errorf("an expired ticket: %d %s", status, body)
	}
	forger, _ := token.NewSigner([]byte(strings.Repeat("x", 32)))
	forged := forger.SignTicket(token.Ticket{KeyHash: service.HashKey(srv.AdminKey), JobID: id, ID: "forged", Expires: time.Now().Add(time.Minute).Unix()})
	if _, status, body := openLog(t, srv.URL, id, "?ticket="+forged, nil); status != http.StatusUnauthorized {
		t.Errorf("a forged ticket: %d %s", status, body)
	}
}

// signIn signs in with key as the web UI does and returns the session
// cookie ("name=value").
func signIn(t *testing.T, url, key string) string {
	t.Helper()
	resp, err := http.Post(url+"/api/v1/session", "application/json", strings.NewReader(`{"key": "`+key+`"}`))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	for _, c := range resp.Cookies() {
		if c.Name == service.SessionCookie && resp.StatusCode == http.StatusOK {
			return c.Name + "=" + c.Value
		}
	}
	t.Fatalf("login: %s, no session cookie", resp.Status)
	return ""
}

// asCookie calls method path on url with the session cookie.
func asCookie(t *testing.T, method, url, path, cookie string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(method, url+path, nil)
	req.Header.Set("Cookie", cookie)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestSignOutEndsTheSession: after sign-out, the cookie, copied before,
// is refused, and a log stream it holds open ends saying so. Revoking the
// key a session was made with ends the session too.
func TestSignOutEndsTheSession(t *testing.T) {
	t.Parallel()
	srv := start(t)
	job, _, err := srv.Client().Submit(context.Background(), client.SubmitParams{Argv: []string{"true"}}) // stays queued: prints nothing
	if err != nil {
		t.Fatal(err)
	}
	cookie := signIn(t, srv.URL, srv.Key(t, spool.RoleRead))
	if status, body := asCookie(t, http.MethodGet, srv.URL, "/api/v1/session", cookie); status != http.StatusOK {
		t.Fatalf("the session before sign-out: %d %s", status, body)
	}
	conn, status, body := openLog(t, srv.URL, job.ID, "", http.Header{"Cookie": {cookie}})
	if status != http.StatusSwitchingProtocols {
		t.Fatalf("the log stream with the session: %d %s", status, body)
	}
	closed := readToClose(conn)

	if status, body := asCookie(t, http.MethodDelete, srv.URL, "/api/v1/session", cookie); status != http.StatusNoContent {
		t.Fatalf("sign-out: %d %s", status, body)
	}
	out := time.Now()
	if status, body := asCookie(t, http.MethodGet, srv.URL, "/api/v1/session", cookie); status != http.StatusUnauthorized || !strings.Contains(body, "your login has ended") {
		t.Errorf("the copied cookie after sign-out: %d %s", status, body)
	}
	if status, body := asCookie(t, http.MethodGet, srv.URL, "/api/v1/jobs", cookie); status != http.StatusUnauthorized {
		t.Errorf("listing jobs with the copied cookie after sign-out: %d %s", status, body)
	}
	select {
	case c := <-closed:
		if c.code != httpapi.CloseUnauthenticated || !strings.Contains(c.reason, "your login has ended") {
			t.Errorf("the open stream ended with %d %q", c.code, c.reason)
		}
		t.Logf("the open stream ended %v after sign-out", c.at.Sub(out).Round(time.Millisecond))
	case <-time.After(10 * time.Second):
		t.Fatal("the open stream outlived the sign-out by 10s")
	}

	keyName := "revoked-reader"
	_, secret, err := srv.Client().CreateKey(context.Background(), client.KeyParams{Name: keyName, Role: spool.RoleRead})
	if err != nil {
		t.Fatal(err)
	}
	cookie = signIn(t, srv.URL, secret)
	if _, err := srv.Client().RevokeKey(context.Background(), keyName); err != nil {
		t.Fatal(err)
	}
	if status, body := asCookie(t, http.MethodGet, srv.URL, "/api/v1/session", cookie); status != http.StatusUnauthorized || !strings.Contains(body, `API key \"revoked-reader\" was revoked`) {
		t.Errorf("a session of a revoked key: %d %s", status, body)
	}
}

// TestRevocationEndsOpenStreams: a revoked key's open log streams (the
// WebSocket and Connect's StreamEvents) end within seconds, though the
// job prints nothing after their first line, saying the key was revoked:
// the WebSocket with 4401 and that reason, StreamEvents with
// Unauthenticated. Nothing of it is an error in the server's log.
func TestRevocationEndsOpenStreams(t *testing.T) {
	t.Parallel()
	cfg := config.Default()
	cfg.Server.Addr, cfg.Server.DataDir, cfg.Server.ShutdownGraceSeconds = "127.0.0.1:0", t.TempDir(), 1
	cfg.Auth.AdminKey = "spool_" + strings.Repeat("a", 40)
	var logs safebuf.Buffer
	srv, err := assembly.Start(context.Background(), cfg, assembly.Options{Log: slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Stop(context.Background()) })
	admin, err := client.New(client.Config{URL: srv.URL(), APIKey: cfg.Auth.AdminKey})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	_, key, err := admin.CreateKey(ctx, client.KeyParams{Name: "watcher", Role: spool.RoleRead})
	if err != nil {
		t.Fatal(err)
	}
	jobID := runningWithOneLine(t, srv.URL(), cfg.Auth.AdminKey)

	// Each stream has the job's one line, so it is open; then the job is
	// silent.
	conn, status, body := openLog(t, srv.URL(), jobID, "", http.Header{"Authorization": {"Bearer " + key}})
	if status != http.StatusSwitchingProtocols {
		t.Fatalf("the log stream: %d %s", status, body)
	}
	if _, msg, err := conn.Read(ctx); err != nil || !strings.Contains(string(msg), `"lines"`) {
		t.Fatalf("the WebSocket's first message: %s %v", msg, err)
	}
	wsClosed := readToClose(conn)
	watcher, err := client.New(client.Config{URL: srv.URL(), APIKey: key})
	if err != nil {
		t.Fatal(err)
	}
	type ended struct {
		err error
		at  time.Time
	}
	firstEvent, rpcEnded := make(chan struct{}), make(chan ended, 1)
	go func() {
		var last error
		got := false
		for ev, err := range watcher.Events(ctx, jobID, client.StreamOptions{Follow: true}).All() {
			if ev != nil && !got {
				got = true
				close(firstEvent)
			}
			last = err
		}
		rpcEnded <- ended{last, time.Now()}
	}()
	select {
	case <-firstEvent:
	case e := <-rpcEnded:
		t.Fatalf("StreamEvents ended before its first event: %v", e.err)
	}

	if _, err := admin.RevokeKey(ctx, "watcher"); err != nil {
		t.Fatal(err)
	}
	revoked := time.Now()
	const within = 10 * time.Second
	select {
	case c := <-wsClosed:
		if c.code != httpapi.CloseUnauthenticated || !strings.Contains(c.reason, `API key "watcher" was revoked`) {
			t.Errorf("the WebSocket ended with %d %q, want 4401 saying the key was revoked", c.code, c.reason)
		}
		t.Logf("the WebSocket ended %v after the revocation", c.at.Sub(revoked).Round(time.Millisecond))
	case <-time.After(within):
		t.Fatalf("the WebSocket outlived its key's revocation by %v", within)
	}
	select {
	case e := <-rpcEnded:
		if !errors.Is(e.err, spool.ErrUnauthenticated) || !strings.Contains(e.err.Error(), `API key "watcher" was revoked`) {
			t.Errorf("StreamEvents ended with %v, want Unauthenticated saying the key was revoked", e.err)
		}
		t.Logf("StreamEvents ended %v after the revocation", e.at.Sub(revoked).Round(time.Millisecond))
	case <-time.After(within):
		t.Fatalf("StreamEvents outlived its key's revocation by %v", within)
	}
	if strings.Contains(logs.String(), "level=ERROR") {
		t.Errorf("a revocation logged an error:\n%s", logs.String())
	}
}

// runningWithOneLine submits a job to the server at url and, as its
// worker, leases it and prints one line, then nothing. It returns the
// job's id.
func runningWithOneLine(t *testing.T, url, key string) string {
	t.Helper()
	rpc, err := wire.Dial(url, wire.Options{APIKey: key})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if _, err := rpc.EnqueueJob(ctx, connect.NewRequest(&spoolv1.EnqueueJobRequest{Params: &spoolv1.JobParams{Argv: []string{"true"}}})); err != nil {
		t.Fatal(err)
	}
	resp, err := rpc.DequeueJobs(ctx, connect.NewRequest(&spoolv1.DequeueJobsRequest{MaxJobs: 1, WaitSeconds: 5, VisibilityTimeoutSeconds: 60}))
	if err != nil || len(resp.Msg.GetLeases()) != 1 {
		t.Fatalf("lease: %v %v", resp, err)
	}
	l := resp.Msg.GetLeases()[0]
	line := events.Batch{Sequence: l.GetNextSequence(), Lines: events.TextLines(time.Now(), "1")}.Event()
	if _, err := rpc.PublishEvents(ctx, connect.NewRequest(&spoolv1.PublishEventsRequest{TaskToken: l.GetTaskToken(), Events: []*spoolv1.JobEvent{line}})); err != nil {
		t.Fatal(err)
	}
	return l.GetJob().GetJobId()
}

// TestTicketsAndSignOutAcrossServers: two servers share a PostgreSQL
// store. A ticket opens its stream on either, once in all; a sign-out on
// one ends the session on the other.
func TestTicketsAndSignOutAcrossServers(t *testing.T) {
	t.Parallel()
	db := pgtest.NewDatabase(t)
	shared := func(c *server.Config) {
		withTokenKey(c)
		c.Store.Type, c.Store.Postgres.URL = "postgres", db
		c.Auth.AdminKey = "spool_" + strings.Repeat("b", 40)
	}
	a, b := start(t, shared), start(t, shared)
	job := spooltest.RunJob(t, a, spooltest.Seq(1, 3)...)

	tk := askTicket(t, a.URL, a.AdminKey, job.ID)
	conn, status, body := openLog(t, b.URL, job.ID, "?ticket="+tk, nil)
	if status != http.StatusSwitchingProtocols {
		t.Fatalf("the ticket from A on B: %d %s", status, body)
	}
	<-readToClose(conn)
	if _, status, body := openLog(t, a.URL, job.ID, "?ticket="+tk, nil); status != http.StatusUnauthorized || !strings.Contains(body, "was used already") {
		t.Errorf("the ticket again, on A: %d %s", status, body)
	}

	cookie := signIn(t, a.URL, a.AdminKey)
	if status, body := asCookie(t, http.MethodGet, b.URL, "/api/v1/session", cookie); status != http.StatusOK {
		t.Fatalf("A's session on B: %d %s", status, body)
	}
	if status, body := asCookie(t, http.MethodDelete, a.URL, "/api/v1/session", cookie); status != http.StatusNoContent {
		t.Fatalf("sign-out on A: %d %s", status, body)
	}
	if status, body := asCookie(t, http.MethodGet, b.URL, "/api/v1/session", cookie); status != http.StatusUnauthorized {
		t.Errorf("the signed-out session on B: %d %s", status, body)
	}
}
