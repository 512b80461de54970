package httpapi_test

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"

	"github.com/spool-run/spool"
	"github.com/spool-run/spool/client"
	"github.com/spool-run/spool/internal/jobjson"
	"github.com/spool-run/spool/server"
	"github.com/spool-run/spool/spooltest"
)

// do sends a request with the bearer credential cred ("" for none).
func do(t *testing.T, method, url, cred string, body io.Reader, header ...string) *http.Response {
	t.Helper()
	req, err := http.NewRequest(method, url, body)
	if err != nil {
		t.Fatal(err)
	}
	if cred != "" {
		req.Header.Set("Authorization", "Bearer "+cred)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}

// TestArtifactRoutes: the job's token uploads over PUT; the list shows
// path, size, sha256 and time; a download is a download (never a page),
// with the SHA-256 as ETag, ranges answered 206 with Content-Range, and a
// matching If-None-Match answered 304.
func TestArtifactRoutes(t *testing.T) {
	e := start(t)
	l := e.running(t)
	base := e.srv.URL + "/api/v1/jobs/" + l.JobID() + "/artifacts"
	body := []byte("<html><script>alert(1)</script></html>\n")
	sum := sha256.Sum256(body)
	hexSum := hex.EncodeToString(sum[:])

	resp := do(t, "PUT", base+"/site/index.html", l.JobToken(), bytes.NewReader(body))
	if resp.StatusCode != http.StatusCreated {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("PUT: %s %s", resp.Status, b)
	}
	var kept jobjson.Artifact
	if err := json.NewDecoder(resp.Body).Decode(&kept); err != nil || kept.SHA256 != hexSum || kept.Path != "site/index.html" {
		t.Fatalf("PUT answered %+v, %v", kept, err)
	}

	resp = do(t, "GET", base, e.srv.AdminKey, nil)
	var list jobjson.ArtifactList
	if err := json.NewDecoder(resp.Body).Decode(&list); err != nil || len(list.Artifacts) != 1 {
		t.Fatalf("list: %s %+v %v", resp.Status, list, err)
	}
	if a := list.Artifacts[0]; a.Path != "site/index.html" || a.Size != int64(len(body)) || a.SHA256 != hexSum || a.Modified.IsZero() {
		t.Fatalf("listed %+v", a)
	}

	resp = do(t, "GET", base+"/site/index.html", e.srv.AdminKey, nil)
	got, _ := io.ReadAll(resp.Body)
	h := resp.Header
	if resp.StatusCode != 200 || !bytes.Equal(got, body) || h.Get("ETag") != `"`+hexSum+`"` ||
		h.Get("Content-Type") != "application/octet-stream" || !strings.HasPrefix(h.Get("Content-Disposition"), "attachment") ||
		h.Get("X-Content-Type-Options") != "nosniff" {
		t.Fatalf("GET: %s %q %v", resp.Status, got, h)
	}
	resp = do(t, "GET", base+"/site/index.html", e.srv.AdminKey, nil, "Range", "bytes=6-13")
	got, _ = io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusPartialContent || string(got) != string(body[6:14]) ||
		resp.Header.Get("Content-Range") != "bytes 6-13/"+strconv.Itoa(len(body)) {
		t.Fatalf("range: %s %q %q", resp.Status, got, resp.Header.Get("Content-Range"))
	}
	resp = do(t, "GET", base+"/site/index.html", e.srv.AdminKey, nil, "If-None-Match", `"`+hexSum+`"`)
	if resp.StatusCode != http.StatusNotModified {
		t.Fatalf("If-None-Match: %s", resp.Status)
	}
	resp = do(t, "GET", base+"/missing.txt", e.srv.AdminKey, nil)
	if resp.StatusCode != http.StatusNotFound {
		t.Fatalf("a missing artifact: %s", resp.Status)
	}
	// The job token downloads nothing, reads no job, over REST or
	// Connect: it is for keeping files.
	resp = do(t, "GET", base+"/site/index.html", l.JobToken(), nil)
	if resp.StatusCode != http.StatusForbidden {
		t.Fatalf("a download with the job token: %s", resp.Status)
	}
	resp = do(t, "GET", e.srv.URL+"/api/v1/jobs/"+l.JobID(), l.JobToken(), nil)
	if resp.StatusCode != http.StatusForbidden {
		t.Fatalf("GET the job with the job token: %s", resp.Status)
	}
	if _, err := e.srv.Client(client.Config{APIKey: l.JobToken()}).Job(context.Background(), l.JobID()); !errors.Is(err, spool.ErrPermissionDenied) {
		t.Fatalf("GetJob over Connect with the job token: %v", err)
	}
	l.End(0)
}

// TestArtifactUploadRefusedBeforeTheBody: an upload without credentials,
// or with a forged token, is answered 401 before any of its body is read:
// the request announces 10 MB and sends none of it.
func TestArtifactUploadRefusedBeforeTheBody(t *testing.T) {
	e := start(t)
	l := e.running(t)
	u, err := url.Parse(e.srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	for name, cred := range map[string]string{"none": "", "forged": "Authorization: Bearer jt1.e30.AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA\r\n"} {
		conn, err := net.Dial("tcp", u.Host)
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(conn, "PUT /api/v1/jobs/%s/artifacts/big.bin HTTP/1.1\r\nHost: %s\r\n%sContent-Length: 10000000\r\n\r\n", l.JobID(), u.Host, cred)
		resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		resp.Body.Close()
		conn.Close()
		if resp.StatusCode != http.StatusUnauthorized {
			t.Fatalf("%s: %s", name, resp.Status)
		}
	}
	l.End(0)
}

// TestArtifactTooLarge: a body whose Content-Length is past
// artifacts.max_file_bytes is answered 413 naming the setting; so is one
// sent without a length once it goes past; nothing is kept of either.
func TestArtifactTooLarge(t *testing.T) {
	srv := spooltest.NewServer(t, spooltest.Config{Server: func(c *server.Config) {
		c.Artifacts.MaxFileBytes = 1000
	}})
	e := &env{srv: srv, c: srv.Client()}
	l := e.running(t)
	jc := srv.Client(client.Config{APIKey: l.JobToken()})
	big := bytes.Repeat([]byte{'x'}, 1001)
	if _, err := jc.UploadArtifact(context.Background(), l.JobID(), "known.bin", bytes.NewReader(big)); !errors.Is(err, spool.ErrInvalidArgument) || !strings.Contains(err.Error(), "artifacts.max_file_bytes") {
		t.Fatalf("1001 bytes of known length: %v", err)
	}
	// io.MultiReader hides the length: the body is chunked.
	if _, err := jc.UploadArtifact(context.Background(), l.JobID(), "streamed.bin", io.MultiReader(bytes.NewReader(big))); !errors.Is(err, spool.ErrInvalidArgument) || !strings.Contains(err.Error(), "artifacts.max_file_bytes") {
		t.Fatalf("1001 bytes streamed: %v", err)
	}
	if _, err := jc.UploadArtifact(context.Background(), l.JobID(), "fits.bin", io.MultiReader(bytes.NewReader(big[:1000]))); err != nil {
		t.Fatal(err)
	}
	list, err := e.c.ListArtifacts(context.Background(), l.JobID())
	if err != nil || len(list) != 1 || list[0].Path != "fits.bin" {
		t.Fatalf("kept %+v, %v", list, err)
	}
	l.End(0)
}

// TestArtifactsReadAsTheLog: a read key limited to another queue sees
// neither the list nor a download, as it does not see the job's log.
func TestArtifactsReadAsTheLog(t *testing.T) {
	e := start(t)
	l := e.running(t)
	if _, err := e.srv.Client(client.Config{APIKey: l.JobToken()}).UploadArtifact(context.Background(), l.JobID(), "a.txt", strings.NewReader("a")); err != nil {
		t.Fatal(err)
	}
	other := e.srv.Client(client.Config{APIKey: e.srv.Key(t, spool.RoleRead, "elsewhere")})
	if _, err := other.ListArtifacts(context.Background(), l.JobID()); !errors.Is(err, spool.ErrNotFound) {
		t.Fatalf("list with another queue's read key: %v", err)
	}
	if _, _, err := other.DownloadArtifact(context.Background(), l.JobID(), "a.txt", 0, -1); !errors.Is(err, spool.ErrNotFound) {
		t.Fatalf("download with another queue's read key: %v", err)
	}
	mine := e.srv.Client(client.Config{APIKey: e.srv.Key(t, spool.RoleRead, "default")})
	rc, info, err := mine.DownloadArtifact(context.Background(), l.JobID(), "a.txt", 0, -1)
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	if b, _ := io.ReadAll(rc); string(b) != "a" || info.Size != 1 {
		t.Fatalf("downloaded %q, %+v", b, info)
	}
	l.End(0)
}
