package httpapi_test

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/spool-run/spool"
	"github.com/spool-run/spool/client"
	"github.com/spool-run/spool/internal/jobjson"
	"github.com/spool-run/spool/internal/service"
)

// batchAnswer is the answer to POST /api/v1/jobs/batch.
type batchAnswer struct {
	Results []struct {
		Job          *jobjson.Job
		Deduplicated bool
		Error, Code  string
	}
	Error string
}

// TestEnqueueJobsREST: good and bad jobs side by side, each answered in
// its place; a repeat finds the jobs the first made.
func TestEnqueueJobsREST(t *testing.T) {
	e := start(t)
	body := `{"jobs": [
		{"queue": "builds", "argv": ["make", "test"], "timeout_seconds": 600, "request_id": "r1"},
		{"queue": "builds"},
		{"script": "echo hi", "timeout_seconds": -1},
		{"script": "echo hi", "max_attempts": 5, "stdin": "aGVsbG8=", "env": {"A": "b"}},
		{"argv": ["x"], "queue": "no spaces"}
	]}`
	var first string
	for round := range 2 {
		var got batchAnswer
		resp := e.postStream(t, e.srv.URL+"/api/v1/jobs/batch", body, true, &got)
		if resp.StatusCode != http.StatusOK || len(got.Results) != 5 {
			t.Fatalf("round %d: %s %+v", round, resp.Status, got)
		}
		r := got.Results
		if j := r[0].Job; j == nil || j.Queue != "builds" || j.Params.TimeoutSeconds != 600 || r[0].Deduplicated != (round == 1) || r[0].Error != "" {
			t.Errorf("round %d: job 0 %+v", round, r[0])
		} else if round == 0 {
			first = j.JobID
		} else if j.JobID != first {
			t.Errorf("a repeat of request r1 made job %s; the first made %s", j.JobID, first)
		}
		for i, want := range map[int]string{1: "argv", 2: "timeout_seconds", 4: "queue"} {
			if r[i].Job != nil || r[i].Code != "invalid_argument" || !strings.Contains(r[i].Error, want) {
				t.Errorf("round %d: job %d %+v, want invalid_argument about %s", round, i, r[i], want)
			}
		}
		if j := r[3].Job; j == nil || j.MaxAttempts != 5 || string(j.Params.Stdin) != "hello" || j.Params.Env["A"] != "b" || j.Queue != "default" {
			t.Errorf("round %d: job 3 %+v", round, r[3])
		}
	}
	if n := countJobs(t, e); n != 3 {
		t.Fatalf("two calls made %d jobs, want 3: r1 once, the unnamed job twice", n)
	}
}

// TestEnqueueJobsRESTRefusals: the call is refused whole for no jobs, too
// many, a body too large, another site's page, a key that may not submit,
// and no key at all.
func TestEnqueueJobsRESTRefusals(t *testing.T) {
	e := start(t)
	u := e.srv.URL + "/api/v1/jobs/batch"
	many := func(n int) string {
		jobs := make([]string, n)
		for i := range jobs {
			jobs[i] = fmt.Sprintf(`{"argv": ["echo", "%d"]}`, i)
		}
		return `{"jobs": [` + strings.Join(jobs, ",") + `]}`
	}
	for name, tc := range map[string]struct {
		body   string
		status int
		want   string
	}{
		"no jobs":   {`{"jobs": []}`, http.StatusBadRequest, "send 1 to 1000"},
		"too many":  {many(service.MaxEnqueueJobs + 1), http.StatusBadRequest, "1001 in one call; send 1 to 1000"},
		"too large": {`{"jobs": [{"script": "` + strings.Repeat("x", service.MaxEnqueueJobsRequestBytes) + `"}]}`, http.StatusRequestEntityTooLarge, "send less"},
		"unknown":   {`{"jobs": [{"command": "make"}]}`, http.StatusBadRequest, "command"},
	} {
		var got batchAnswer
		if resp := e.postStream(t, u, tc.body, true, &got); resp.StatusCode != tc.status || !strings.Contains(got.Error, tc.want) {
			t.Errorf("%s: %s %q, want %d with %q", name, resp.Status, got.Error, tc.status, tc.want)
		}
	}
	var full batchAnswer
	if resp := e.postStream(t, u, many(service.MaxEnqueueJobs), false, &full); resp.StatusCode != http.StatusOK || len(full.Results) != 1000 || full.Results[999].Job == nil {
		t.Errorf("1000 jobs: %s, %d results", resp.Status, len(full.Results))
	}

	var got batchAnswer
	if resp := e.do(t, "POST", u, http.Header{"Origin": {"https://evil.example"}}, &got); resp.StatusCode != http.StatusForbidden {
		t.Errorf("from another site's page: %s %q", resp.Status, got.Error)
	}
	for name, key := range map[string]string{"a read key": e.srv.Key(t, spool.RoleRead), "a worker key": e.srv.Key(t, spool.RoleWorker, "builds")} {
		req, _ := http.NewRequest(http.MethodPost, u, strings.NewReader(many(2)))
		req.Header.Set("Authorization", "Bearer "+key)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusForbidden || !strings.Contains(string(b), "may not submit") {
			t.Errorf("%s: %s %s, want 403", name, resp.Status, b)
		}
	}
	req, _ := http.NewRequest(http.MethodPost, u, strings.NewReader(many(2)))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("no key: %s, want 401", resp.Status)
	}
	if n := countJobs(t, e); n != 1000 {
		t.Errorf("the refused calls made jobs: %d in all, want the 1000 of the one call taken", n)
	}
}

// countJobs counts the server's jobs.
func countJobs(t *testing.T, e *env) int {
	t.Helper()
	n := 0
	for _, err := range e.c.Jobs(t.Context(), client.ListParams{PageSize: 500}) {
		if err != nil {
			t.Fatal(err)
		}
		n++
	}
	return n
}

// TestEnqueueJobsRESTBatching: a job's own batching goes in its
// "batching" and comes back in its params; beyond the server's bounds, or
// a negative interval, is that job's invalid_argument.
func TestEnqueueJobsRESTBatching(t *testing.T) {
	e := start(t)
	body := `{"jobs": [
		{"argv": ["seq", "9"], "batching": {"flush_interval_seconds": 0.2, "max_batch_size": 10}},
		{"argv": ["seq", "9"], "batching": {"max_batch_size": 100000}},
		{"argv": ["seq", "9"], "batching": {"flush_interval_seconds": -1}}
	]}`
	var got batchAnswer
	if resp := e.postStream(t, e.srv.URL+"/api/v1/jobs/batch", body, true, &got); resp.StatusCode != http.StatusOK || len(got.Results) != 3 {
		t.Fatalf("%s %+v", resp.Status, got)
	}
	r := got.Results
	if j := r[0].Job; j == nil || j.Params.Batching == nil || *j.Params.Batching != (jobjson.Batching{FlushIntervalSeconds: 0.2, MaxBatchSize: 10}) {
		t.Errorf("job 0 %+v", r[0])
	}
	for i, want := range map[int]string{1: "execution.batching.job_max_batch_size", 2: "batching.flush_interval_seconds=-1"} {
		if r[i].Job != nil || r[i].Code != "invalid_argument" || !strings.Contains(r[i].Error, want) {
			t.Errorf("job %d %+v, want invalid_argument about %s", i, r[i], want)
		}
	}
}
