package httpapi_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/spool-run/spool/client"
	"github.com/spool-run/spool/internal/jobjson"
	"github.com/spool-run/spool/spooltest"
)

func TestJobs(t *testing.T) {
	t.Parallel()
	e := start(t)
	ctx := context.Background()
	finished := spooltest.RunJob(t, e.srv, spooltest.Seq(1, 3)...)
	queued, _, err := e.c.Submit(ctx, client.SubmitParams{Queue: "builds", Script: "make test", Env: map[string]string{"CI": "1"},
		Timeout: 90 * time.Second, RequestID: "req-1"})
	if err != nil {
		t.Fatal(err)
	}

	t.Run("get", func(t *testing.T) {
		var j jobjson.Job
		if resp := e.get(t, "/api/v1/jobs/"+queued.ID, &j); resp.StatusCode != http.StatusOK {
			t.Fatal(resp.Status)
		}
		want := jobjson.Job{JobID: queued.ID, Kind: "command", Queue: "builds", State: "queued", CreatedAt: queued.CreatedAt, UpdatedAt: queued.UpdatedAt,
			MaxAttempts: int32(queued.MaxAttempts), RequestID: "req-1",
			Params: jobjson.JobParams{Script: "make test", Env: map[string]string{"CI": "1"}, TimeoutSeconds: 90}}
		if !sameJob(j, want) {
			t.Errorf("got %+v\nwant %+v", j, want)
		}
		e.get(t, "/api/v1/jobs/"+finished.ID, &j)
		if j.State != "succeeded" || j.LineCount != 3 || j.Result == nil || j.Result.ExitCode != 0 || j.Result.Attempt != 1 || j.Result.FinishedAt.IsZero() {
			t.Errorf("finished job: %+v result %+v", j, j.Result)
		}
	})

	t.Run("list", func(t *testing.T) {
		for _, tc := range []struct {
			query string
			want  []string
		}{
			{"", []string{queued.ID, finished.ID}},
			{"?queue=builds", []string{queued.ID}},
			{"?state=succeeded", []string{finished.ID}},
			{"?state=queued,running", []string{queued.ID}},
			{"?state=queued&state=succeeded", []string{queued.ID, finished.ID}},
			{"?queue=none", nil},
		} {
			var l jobjson.List
			if resp := e.get(t, "/api/v1/jobs"+tc.query, &l); resp.StatusCode != http.StatusOK {
				t.Fatalf("%s: %s", tc.query, resp.Status)
			}
			if got := ids(l.Jobs); strings.Join(got, " ") != strings.Join(tc.want, " ") || l.Jobs == nil {
				t.Errorf("jobs%s = %v, want %v", tc.query, got, tc.want)
			}
		}
		var page1, page2 jobjson.List
		e.get(t, "/api/v1/jobs?limit=1", &page1)
		e.get(t, "/api/v1/jobs?limit=1&cursor="+page1.NextCursor, &page2)
		if got := ids(append(page1.Jobs, page2.Jobs...)); len(got) != 2 || got[0] != queued.ID || got[1] != finished.ID || page2.NextCursor != "" {
			t.Errorf("pages of 1: %v, cursors %q %q", got, page1.NextCursor, page2.NextCursor)
		}
	})

	t.Run("cancel", func(t *testing.T) {
		var body errorBody
		if resp := e.do(t, "POST", e.srv.URL+"/api/v1/jobs/"+queued.ID+"/cancel", http.Header{"Origin": {"https://evil.example"}}, &body); resp.StatusCode != http.StatusForbidden {
			t.Errorf("cross-origin cancel: %s %q", resp.Status, body.Error)
		}
		var j jobjson.Job
		resp := e.post(t, e.srv.URL+"/api/v1/jobs/"+queued.ID+"/cancel", `{"reason":"not needed"}`, &j)
		if resp.StatusCode != http.StatusOK || j.State != "cancelled" || j.Result == nil || !strings.Contains(j.Result.Error, "not needed") {
			t.Errorf("cancel queued job: %s %+v", resp.Status, j)
		}
		for _, bad := range []string{`{"reason":1}`, `{"why":"x"}`, `not json`, `{"reason":"line\nbreak"}`} {
			if resp := e.post(t, e.srv.URL+"/api/v1/jobs/"+queued.ID+"/cancel", bad, &body); resp.StatusCode != http.StatusBadRequest {
				t.Errorf("cancel with body %s: %s", bad, resp.Status)
			}
		}
		l := e.running(t)
		if resp := e.post(t, e.srv.URL+"/api/v1/jobs/"+l.JobID()+"/cancel", "", &j); resp.StatusCode != http.StatusOK || j.State != "running" || !j.CancelRequested {
			t.Errorf("cancel running job: %s %+v", resp.Status, j)
		}
	})
}

// post sends body with the server's admin key.
func (e *env) post(t *testing.T, u, body string, out any) *http.Response {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, u, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+e.srv.AdminKey)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if err := jsonDecode(resp, out); err != nil {
		t.Fatal(err)
	}
	return resp
}

func ids(jobs []jobjson.Job) []string {
	var out []string
	for _, j := range jobs {
		out = append(out, j.JobID)
	}
	return out
}

func sameJob(a, b jobjson.Job) bool {
	return a.JobID == b.JobID && a.Queue == b.Queue && a.State == b.State && a.CreatedAt.Equal(b.CreatedAt) && a.UpdatedAt.Equal(b.UpdatedAt) &&
		a.Attempt == b.Attempt && a.MaxAttempts == b.MaxAttempts && a.RequestID == b.RequestID && a.Result == nil && b.Result == nil &&
		a.Params.Script == b.Params.Script && a.Params.TimeoutSeconds == b.Params.TimeoutSeconds && len(a.Params.Env) == 1 && a.Params.Env["CI"] == b.Params.Env["CI"]
}
