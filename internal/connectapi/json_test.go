package connectapi_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/spool-run/spool/client"
	"github.com/spool-run/spool/gen/spool/v1/spoolv1connect"
	"github.com/spool-run/spool/spooltest"
)

// TestJSONRefusesUnknownEnumValues: over Connect JSON, an enum value the
// server does not know by name is refused (it used to be dropped, and a
// listing of "NOPE" jobs listed every job), while fields the server does
// not know are still ignored, at any depth, also beside an unknown enum
// value.
func TestJSONRefusesUnknownEnumValues(t *testing.T) {
	srv := spooltest.NewServer(t)
	ctx := context.Background()
	queued, _, err := srv.Client().Submit(ctx, client.SubmitParams{Argv: []string{"true"}})
	if err != nil {
		t.Fatal(err)
	}
	call := func(procedure, body string) (int, string) {
		t.Helper()
		return postJSON(t, srv, procedure, body)
	}
	list := spoolv1connect.JobServiceListJobsProcedure
	for _, body := range []string{
		`{"states":["NOPE"]}`,
		`{"states":["JOB_STATE_QUEUED","NOPE"]}`,
		`{"futureField":1,"states":["NOPE"]}`,
	} {
		status, out := call(list, body)
		var e rpcError
		_ = json.Unmarshal([]byte(out), &e)
		if status != http.StatusBadRequest || e.Code != "invalid_argument" || !strings.Contains(e.Message, "NOPE") {
			t.Errorf("ListJobs %s: %d %s; want invalid_argument naming NOPE", body, status, out)
		}
	}
	for _, body := range []string{
		`{"states":["JOB_STATE_QUEUED"]}`,
		`{"states":["JOB_STATE_QUEUED"],"futureField":{"deep":[1,2]}}`,
	} {
		status, out := call(list, body)
		var page struct {
			Jobs []struct {
				JobID string `json:"jobId"`
			} `json:"jobs"`
		}
		_ = json.Unmarshal([]byte(out), &page)
		if status != http.StatusOK || len(page.Jobs) != 1 || page.Jobs[0].JobID != queued.ID {
			t.Errorf("ListJobs %s: %d %s; want the queued job", body, status, out)
		}
	}
	// An unknown field inside a nested message is ignored too.
	status, out := call(spoolv1connect.JobServiceEnqueueJobProcedure, `{"params":{"argv":["true"],"futureParam":"x"},"futureField":true}`)
	if status != http.StatusOK {
		t.Errorf("EnqueueJob with unknown fields: %d %s", status, out)
	}
}

// postJSON calls procedure of srv in Connect's JSON with the admin key, as
// a script would, and returns the status and the body of the answer.
func postJSON(t *testing.T, srv *spooltest.Server, procedure, body string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, srv.URL+procedure, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+srv.AdminKey)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(out)
}
