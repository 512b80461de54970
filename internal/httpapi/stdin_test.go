package httpapi_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/spool-run/spool"
	"github.com/spool-run/spool/server"
	"github.com/spool-run/spool/spooltest"
)

// sendRaw makes a request with key (none when empty) and headers, and
// decodes a JSON answer into out (if not nil).
func sendRaw(t *testing.T, method, url, key string, body io.Reader, hdr map[string]string, out any) *http.Response {
	t.Helper()
	req, err := http.NewRequest(method, url, body)
	if err != nil {
		t.Fatal(err)
	}
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if out != nil {
		if err := jsonDecode(resp, out); err != nil {
			t.Fatal(err)
		}
	} else {
		_, _ = io.Copy(io.Discard, resp.Body)
	}
	return resp
}

type errorAnswer struct {
	Error string `json:"error"`
}

// A stdin uploaded over REST and named by a job enqueued over REST is
// read back, whole, by the worker holding the job's lease, and by no one
// else; an upload is refused to a key that may not submit, and one
// over the limit (declared, before it is read, or found reading it).
func TestUploadAndStdinREST(t *testing.T) {
	t.Parallel()
	srv := spooltest.NewServer(t, spooltest.Config{Server: func(c *server.Config) { c.Jobs.MaxStdinBytes = 2 << 20 }})
	data := bytes.Repeat([]byte("large stdin\n"), 100_000) // 1.2 MB

	var refused errorAnswer
	if resp := sendRaw(t, "POST", srv.URL+"/api/v1/uploads", srv.Key(t, spool.RoleRead), bytes.NewReader(data), nil, &refused); resp.StatusCode != http.StatusForbidden {
		t.Errorf("an upload with a read key: %s %q", resp.Status, refused.Error)
	}
	req, _ := http.NewRequest("POST", srv.URL+"/api/v1/uploads", io.LimitReader(zeros{}, 3<<20))
	req.ContentLength = 3 << 20
	req.Header.Set("Authorization", "Bearer "+srv.AdminKey)
	if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != http.StatusRequestEntityTooLarge {
		t.Errorf("an upload declared over jobs.max_stdin_bytes: %v %v", resp, err)
	} else {
		resp.Body.Close()
	}
	chunked := io.MultiReader(io.LimitReader(zeros{}, 3<<20)) // no length: read until over
	if resp := sendRaw(t, "POST", srv.URL+"/api/v1/uploads", srv.AdminKey, chunked, nil, &refused); resp.StatusCode != http.StatusBadRequest || !strings.Contains(refused.Error, "jobs.max_stdin_bytes") {
		t.Errorf("an upload over jobs.max_stdin_bytes: %s %q", resp.Status, refused.Error)
	}

	var up struct {
		UploadID string `json:"upload_id"`
		Size     int64  `json:"size"`
	}
	if resp := sendRaw(t, "POST", srv.URL+"/api/v1/uploads", srv.Key(t, spool.RoleSubmit), bytes.NewReader(data), nil, &up); resp.StatusCode != http.StatusCreated || up.Size != int64(len(data)) {
		t.Fatalf("an upload: %s %+v", resp.Status, up)
	}
	body, _ := json.Marshal(map[string]any{"jobs": []map[string]any{{"argv": []string{"wc", "-c"}, "queue": "big", "stdin_upload": up.UploadID}}})
	var enq struct {
		Results []struct {
			Job *struct {
				ID     string `json:"id"`
				Params struct {
					StdinSize int64 `json:"stdin_size"`
				} `json:"params"`
			} `json:"job"`
			Error string `json:"error"`
		} `json:"results"`
	}
	if resp := sendRaw(t, "POST", srv.URL+"/api/v1/jobs/batch", srv.AdminKey, bytes.NewReader(body), map[string]string{"Content-Type": "application/json"}, &enq); resp.StatusCode != http.StatusOK ||
		len(enq.Results) != 1 || enq.Results[0].Job == nil || enq.Results[0].Job.Params.StdinSize != int64(len(data)) {
		t.Fatalf("enqueue naming the upload: %s %+v", resp.Status, enq)
	}

	lease := spooltest.LeaseJob(t, srv, "big")
	stdinURL := srv.URL + "/api/v1/jobs/" + lease.JobID() + "/stdin"
	token := map[string]string{"Spool-Task-Token": lease.TaskToken()}
	if resp := sendRaw(t, "GET", stdinURL, srv.Key(t, spool.RoleSubmit), nil, token, &refused); resp.StatusCode != http.StatusForbidden {
		t.Errorf("a submit key reading a job's stdin: %s %q", resp.Status, refused.Error)
	}
	if resp := sendRaw(t, "GET", stdinURL, srv.Key(t, spool.RoleWorker), nil, nil, &refused); resp.StatusCode != http.StatusBadRequest {
		t.Errorf("a worker key without a task token: %s %q", resp.Status, refused.Error)
	}
	req, _ = http.NewRequest("GET", stdinURL, nil)
	req.Header.Set("Authorization", "Bearer "+srv.Key(t, spool.RoleWorker))
	req.Header.Set("Spool-Task-Token", lease.TaskToken())
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil || resp.StatusCode != http.StatusOK || !bytes.Equal(got, data) || resp.ContentLength != int64(len(data)) {
		t.Fatalf("the lease holder's stdin: %s, %d bytes of %d (%v)", resp.Status, len(got), len(data), err)
	}
}

// zeros reads as endless zero bytes.
type zeros struct{}

func (zeros) Read(p []byte) (int, error) {
	clear(p)
	return len(p), nil
}
