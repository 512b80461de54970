package httpapi_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/spool-run/spool/server"
	"github.com/spool-run/spool/spooltest"
)

// startMemory is a real server on the memory store, which already keeps
// schedules and scheduled jobs.
func startMemory(t *testing.T) *env {
	t.Helper()
	s := spooltest.NewServer(t, spooltest.Config{Server: func(c *server.Config) { c.Store.Type = "memory" }})
	return &env{srv: s, c: s.Client()}
}

// call sends body (nil: none) as the admin and decodes the answer into
// out, returning its status.
func (e *env) call(t *testing.T, method, path string, body any, out any) int {
	t.Helper()
	var r io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			t.Fatal(err)
		}
		r = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, e.srv.URL+path, r)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+e.srv.AdminKey)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	if out != nil && len(data) > 0 {
		if err := json.Unmarshal(data, out); err != nil {
			t.Fatalf("%s %s: %s: %v", method, path, data, err)
		}
	}
	return resp.StatusCode
}

type scheduleJSON struct {
	Name       string          `json:"name"`
	Cron       string          `json:"cron"`
	Job        json.RawMessage `json:"job"`
	Overlap    string          `json:"overlap"`
	Missed     string          `json:"missed"`
	Paused     bool            `json:"paused"`
	NextTickAt *time.Time      `json:"next_tick_at"`
	Revision   int64           `json:"revision"`
	Error      string          `json:"error"`
}

// The schedules' routes create, show, pause, resume and delete a
// schedule, and refuse what the core refuses with its words.
func TestScheduleRoutes(t *testing.T) {
	e := startMemory(t)
	var sc scheduleJSON
	body := map[string]any{"name": "nightly", "cron": "0 3 * * *", "timezone": "Europe/Paris", "overlap": "skip",
		"job": map[string]any{"queue": "reports", "argv": []string{"make", "report"}, "priority": 1}}
	if code := e.call(t, "POST", "/api/v1/schedules", body, &sc); code != http.StatusCreated || sc.Overlap != "skip" || sc.Missed != "run_once" || sc.NextTickAt == nil {
		t.Fatalf("create: %d %+v", code, sc)
	}
	if !strings.Contains(string(sc.Job), `"priority":1`) || !strings.Contains(string(sc.Job), `"queue":"reports"`) {
		t.Errorf("the schedule's job shows as %s", sc.Job)
	}
	var list struct{ Schedules []scheduleJSON }
	if code := e.call(t, "GET", "/api/v1/schedules", nil, &list); code != http.StatusOK || len(list.Schedules) != 1 {
		t.Errorf("list: %d %+v", code, list)
	}
	sc = scheduleJSON{}
	if code := e.call(t, "POST", "/api/v1/schedules/nightly/pause", nil, &sc); code != http.StatusOK || !sc.Paused || sc.NextTickAt != nil {
		t.Errorf("pause: %d %+v", code, sc)
	}
	if code := e.call(t, "POST", "/api/v1/schedules/nightly/resume", nil, &sc); code != http.StatusOK || sc.Paused || sc.Revision != 3 {
		t.Errorf("resume: %d %+v", code, sc)
	}
	var bad scheduleJSON
	if code := e.call(t, "POST", "/api/v1/schedules", map[string]any{"name": "x", "cron": "every day", "job": map[string]any{"argv": []string{"x"}}}, &bad); code != http.StatusBadRequest || !strings.Contains(bad.Error, "cron") {
		t.Errorf("a bad cron: %d %q", code, bad.Error)
	}
	if code := e.call(t, "POST", "/api/v1/schedules", map[string]any{"name": "x", "cron": "@daily", "overlap": "maybe", "job": map[string]any{"argv": []string{"x"}}}, &bad); code != http.StatusBadRequest || !strings.Contains(bad.Error, "allow or skip") {
		t.Errorf("a bad overlap: %d %q", code, bad.Error)
	}
	if code := e.call(t, "DELETE", "/api/v1/schedules/nightly", nil, nil); code != http.StatusNoContent {
		t.Errorf("delete: %d", code)
	}
	if code := e.call(t, "GET", "/api/v1/schedules/nightly", nil, &bad); code != http.StatusNotFound {
		t.Errorf("get after delete: %d %q", code, bad.Error)
	}
}

// A queue is configured over REST, and the batch route takes a job's
// time, priority and webhooks.
func TestConfigureAndTimingRoutes(t *testing.T) {
	e := startMemory(t)
	var q struct {
		Name  string `json:"name"`
		Error string `json:"error"`
	}
	if code := e.call(t, "POST", "/api/v1/queues/gpu/configure", map[string]any{"max_running": 2}, &q); code != http.StatusOK || q.Name != "gpu" {
		t.Errorf("configure: %d %+v", code, q)
	}
	if code := e.call(t, "POST", "/api/v1/queues/gpu/configure", map[string]any{"max_running": 20000}, &q); code != http.StatusBadRequest || !strings.Contains(q.Error, "max_running") {
		t.Errorf("configure 20000: %d %+v", code, q)
	}
	var res struct {
		Results []struct {
			Job struct {
				ID string `json:"job_id"`
			} `json:"job"`
			Error string `json:"error"`
		} `json:"results"`
	}
	jobs := map[string]any{"jobs": []map[string]any{
		{"queue": "gpu", "argv": []string{"train"}, "run_in_seconds": 3600, "priority": 1, "notify": []string{"https://hooks.example.com/x"}},
		{"queue": "gpu", "argv": []string{"train"}, "run_in_seconds": -5},
		{"queue": "gpu", "argv": []string{"train"}, "notify": []string{"file:///etc/passwd"}},
	}}
	if code := e.call(t, "POST", "/api/v1/jobs/batch", jobs, &res); code != http.StatusOK || len(res.Results) != 3 {
		t.Fatalf("batch: %d %+v", code, res)
	}
	if r := res.Results[0]; r.Error != "" || r.Job.ID == "" {
		t.Fatalf("a job to run in an hour: %+v", r)
	}
	// The Connect API shows the job as the core made it.
	var got struct {
		Job struct {
			State    string   `json:"state"`
			Priority int32    `json:"priority"`
			Notify   []string `json:"notify"`
			RunAfter string   `json:"runAfter"`
		} `json:"job"`
	}
	if code := e.call(t, "POST", "/spool.v1.JobService/GetJob", map[string]any{"job_id": res.Results[0].Job.ID}, &got); code != http.StatusOK ||
		got.Job.State != "JOB_STATE_SCHEDULED" || got.Job.Priority != 1 || len(got.Job.Notify) != 1 || got.Job.RunAfter == "" {
		t.Errorf("the job to run in an hour: %d %+v", code, got.Job)
	}
	if r := res.Results[1]; !strings.Contains(r.Error, "run_in_seconds") {
		t.Errorf("a negative run_in_seconds: %+v", r)
	}
	if r := res.Results[2]; !strings.Contains(r.Error, "only http") {
		t.Errorf("a file URL: %+v", r)
	}
}
