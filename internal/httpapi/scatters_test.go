package httpapi_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/spool-run/spool/internal/httpapi"
	"github.com/spool-run/spool/internal/jobjson"
	"github.com/spool-run/spool/internal/service"
	"github.com/spool-run/spool/spooltest"
	"github.com/spool-run/spool/worker"
)

// batchScript is what the REST scatter's batches run: it checks that the
// batch input reached it and leaves its index and the environment's X as
// its result.
const batchScript = `grep -q '"batch_input":{"width":800}' && printf '{"index":%s,"x":"%s"}' "$SPOOL_BATCH_INDEX" "$X" > "$SPOOL_RESULT"`

// A scatter created over REST runs to the end on a worker; it can be read,
// listed, paged by batch and cancelled there, in the shapes the command
// line prints.
func TestScatters(t *testing.T) {
	t.Parallel()
	e := start(t)
	spooltest.NewWorker(t, e.srv, worker.Config{Concurrency: 4}) // serves queue "default" only

	gather := `cat > "$SPOOL_RESULT"`
	var run jobjson.Scatter
	resp := e.post(t, e.srv.URL+"/api/v1/scatters", mustJSON(t, map[string]any{
		"script":                  batchScript,
		"env":                     map[string]string{"X": "yes"},
		"timeout_seconds":         60,
		"batches":                 []any{[]int{1, 2}, []string{"a"}, []any{map[string]int{"k": 3}, nil, true}},
		"batch_input":             map[string]int{"width": 800},
		"max_concurrency":         2,
		"tolerated_failure_count": 0,
		"gather":                  gather,
	}), &run)
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("create: %s %+v", resp.Status, run)
	}
	id := run.ScatterID
	if loc := resp.Header.Get("Location"); loc != "/api/v1/scatters/"+id {
		t.Errorf("Location %q", loc)
	}
	spec := run.Spec
	if run.State != "running" || run.Progress.BatchCount != 3 || run.Progress.ItemCount != 6 || spec.Queue != "default" ||
		spec.Params.Script != batchScript || spec.Params.Env["X"] != "yes" || spec.Params.TimeoutSeconds != 60 ||
		string(spec.BatchInput) != `{"width":800}` || spec.MaxConcurrency != 2 || spec.ToleratedFailureCount == nil || *spec.ToleratedFailureCount != 0 ||
		spec.MaxAttempts < 1 {
		t.Errorf("created scatter: %+v", run)
	}
	// The gather is the batches' command line made a shell command.
	if g := spec.Gather; g == nil || g.Script != gather || g.Argv != nil || g.Env["X"] != "yes" || g.TimeoutSeconds != 60 {
		t.Errorf("gather: %+v", spec.Gather)
	}

	held := e.createScatter(t, `{"queue":"held","argv":["true"],"batches":[[1],[2]],"max_concurrency":1}`)

	t.Run("runs to the end", func(t *testing.T) {
		sc := e.waitScatter(t, id)
		if sc.State != "succeeded" || sc.Progress.Succeeded != 3 || sc.Progress.ItemsDone != 6 || sc.GatherJobID != id+".gather" {
			t.Fatalf("scatter ended %+v", sc)
		}
		var g jobjson.Job
		e.get(t, "/api/v1/jobs/"+sc.GatherJobID, &g)
		var doc struct {
			BatchResults  map[string]json.RawMessage `json:"batch_results"`
			FailedBatches []int                      `json:"failed_batches"`
		}
		if g.Result == nil || g.Params.Scatter == nil || !g.Params.Scatter.Gather || g.Params.Scatter.ScatterID != id {
			t.Fatalf("gather job %+v", g)
		}
		if err := json.Unmarshal(g.Result.Output, &doc); err != nil || len(doc.BatchResults) != 3 || len(doc.FailedBatches) != 0 ||
			string(doc.BatchResults["1"]) != `{"index":1,"x":"yes"}` {
			t.Errorf("the gather left %s (%v)", g.Result.Output, err)
		}
	})

	t.Run("batches", func(t *testing.T) {
		var first, rest jobjson.ScatterBatches
		e.get(t, "/api/v1/scatters/"+id+"/batches?page_size=2", &first)
		e.get(t, fmt.Sprintf("/api/v1/scatters/%s/batches?from=%d&page_size=2", id, first.NextIndex), &rest)
		if len(first.Batches) != 2 || first.NextIndex != 2 || len(rest.Batches) != 1 || rest.NextIndex != 0 {
			t.Fatalf("pages of 2: %d batches then %d, next_index %d then %d", len(first.Batches), len(rest.Batches), first.NextIndex, rest.NextIndex)
		}
		for i, b := range append(first.Batches, rest.Batches...) {
			j := b.Job
			if b.BatchIndex != int32(i) || b.ItemCount != []int32{2, 1, 3}[i] || j == nil || j.JobID != fmt.Sprintf("%s.%d", id, i) || j.State != "succeeded" ||
				j.Params.Scatter == nil || j.Params.Scatter.BatchIndex != int32(i) || j.Result == nil || string(j.Result.Output) != fmt.Sprintf(`{"index":%d,"x":"yes"}`, i) {
				t.Errorf("batch %d: %+v, job %+v", i, b, j)
			}
		}
		var body errorBody
		if resp := e.get(t, "/api/v1/scatters/"+id+"/batches?from=4", &body); resp.StatusCode != http.StatusBadRequest || !strings.Contains(body.Error, "from") {
			t.Errorf("from past the end: %s %q", resp.Status, body.Error)
		}
	})

	t.Run("list", func(t *testing.T) {
		var all jobjson.ScatterList
		if resp := e.get(t, "/api/v1/scatters", &all); resp.StatusCode != http.StatusOK || len(all.Scatters) != 2 ||
			all.Scatters[0].ScatterID != held || all.Scatters[1].ScatterID != id || all.NextCursor != "" {
			t.Fatalf("scatters: %s %+v", resp.Status, all)
		}
		var got []string
		cursor := ""
		for range 3 {
			var page jobjson.ScatterList
			e.get(t, "/api/v1/scatters?page_size=1&cursor="+url.QueryEscape(cursor), &page)
			for _, sc := range page.Scatters {
				got = append(got, sc.ScatterID)
			}
			if cursor = page.NextCursor; cursor == "" {
				break
			}
		}
		if strings.Join(got, " ") != held+" "+id || cursor != "" {
			t.Errorf("pages of 1: %v, then cursor %q; want %s %s", got, cursor, held, id)
		}
	})

	t.Run("cancel", func(t *testing.T) {
		path := e.srv.URL + "/api/v1/scatters/" + held + "/cancel"
		var body errorBody
		if resp := e.do(t, "POST", path, http.Header{"Origin": {"https://evil.example"}}, &body); resp.StatusCode != http.StatusForbidden {
			t.Errorf("cross-origin cancel: %s %q", resp.Status, body.Error)
		}
		for _, bad := range []string{`{"reason":1}`, `{"why":"x"}`, `not json`} {
			if resp := e.post(t, path, bad, &body); resp.StatusCode != http.StatusBadRequest {
				t.Errorf("cancel with body %s: %s", bad, resp.Status)
			}
		}
		var sc jobjson.Scatter
		if resp := e.post(t, path, `{"reason":"not needed"}`, &sc); resp.StatusCode != http.StatusOK || sc.State != "cancelled" ||
			!strings.Contains(sc.Error, "not needed") || sc.Progress.Succeeded+sc.Progress.Failed != 0 {
			t.Errorf("cancel: %s %+v", resp.Status, sc)
		}
		// Cancelling again changes nothing.
		if resp := e.post(t, path, "", &sc); resp.StatusCode != http.StatusOK || sc.State != "cancelled" || !strings.Contains(sc.Error, "not needed") {
			t.Errorf("cancel again: %s %+v", resp.Status, sc)
		}
	})
}

// Bodies that are not a scatter are refused with 400 and a message that
// names the problem, and nothing is created.
func TestCreateScatterBadInput(t *testing.T) {
	t.Parallel()
	e := start(t)
	for _, tc := range []struct {
		body, mention string
	}{
		{``, "argv"},
		{`not json`, "not JSON"},
		{`{"script":"true","batches":[[1]]`, "not JSON"},
		{`{"script":"true","batches":[[1]]} {"script":"true"}`, "exactly one"},
		{`{"script":"true","batches":[[1]],"colour":"red"}`, `unknown field "colour"`},
		{`{"script":"true"}`, "at least one batch"},
		{`{"script":"true","batches":[]}`, "at least one batch"},
		{`{"script":"true","batches":[[1],[]]}`, "batches[1]: empty"},
		{`{"script":"true","batches":[[1],2]}`, "batches[1] is a number, not an array"},
		{`{"script":"true","batches":[{"items":[1]}]}`, "batches[0] is an object, not an array"},
		{`{"script":"true","batches":["[1]"]}`, "batches[0] is a string, not an array"},
		{`{"script":"true","batches":[null]}`, "batches[0] is null, not an array"},
		{`{"script":"true","batches":{"0":[1]}}`, "batches: got JSON object, want an array"},
		{`[[1]]`, "got JSON array, want an object"},
		{`{"batches":[[1]]}`, "argv"},
		{`{"argv":["true"],"script":"true","batches":[[1]]}`, "exactly one"},
		{`{"argv":"true","batches":[[1]]}`, "argv: got JSON string, want an array"},
		{`{"script":"true","batches":[[1]],"env":{"A":1}}`, "env: got JSON number, want a string"},
		{`{"script":"true","batches":[[1]],"timeout_seconds":-1}`, "timeout_seconds"},
		{`{"script":"true","batches":[[1]],"timeout_seconds":1e300}`, "timeout_seconds"},
		{`{"script":"true","batches":[[1]],"max_attempts":"3"}`, "max_attempts: got JSON string, want an integer"},
		{`{"script":"true","batches":[[1]],"max_concurrency":-1}`, "max_concurrency"},
		{`{"script":"true","batches":[[1]],"tolerated_failure_count":-1}`, "tolerated_failure_count"},
		{`{"script":"true","batches":[[1]],"tolerated_failure_percentage":150}`, "tolerated_failure_percentage"},
		{`{"script":"true","batches":[[1]],"queue":"two words"}`, "queue"},
		{`{"script":"true","batches":[[1]],"gather":"a\u0000b"}`, "gather"},
	} {
		t.Run(tc.body, func(t *testing.T) {
			var body errorBody
			resp := e.post(t, e.srv.URL+"/api/v1/scatters", tc.body, &body)
			if resp.StatusCode != http.StatusBadRequest || !strings.Contains(body.Error, tc.mention) {
				t.Errorf("%s: %q; want 400 mentioning %q", resp.Status, body.Error, tc.mention)
			}
			if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
				t.Errorf("Content-Type %q", ct)
			}
		})
	}
	var body errorBody
	if resp := e.do(t, "POST", e.srv.URL+"/api/v1/scatters", http.Header{"Origin": {"https://evil.example"}}, &body); resp.StatusCode != http.StatusForbidden {
		t.Errorf("cross-origin create: %s %q", resp.Status, body.Error)
	}
	var l jobjson.ScatterList
	if e.get(t, "/api/v1/scatters", &l); len(l.Scatters) != 0 {
		t.Errorf("refused bodies created %d scatters", len(l.Scatters))
	}
}

// POST /api/v1/scatters takes bodies far larger than any other call, up to
// service.MaxScatterRequestBytes; over its limit, declared or not, it
// answers 413 without creating anything.
func TestScatterBodyLimit(t *testing.T) {
	t.Run("the real limit", func(t *testing.T) {
		e := start(t)
		// A body 16 times the largest limit of any other call (the Connect
		// API's) is taken.
		item := mustJSON(t, strings.Repeat("x", service.MaxRequestBytes))
		big := `{"queue":"held","script":"true","max_concurrency":1,"batches":[` + strings.Repeat("["+item+"],", 15) + "[" + item + "]]}"
		var sc jobjson.Scatter
		if resp := e.post(t, e.srv.URL+"/api/v1/scatters", big, &sc); resp.StatusCode != http.StatusCreated || sc.Progress.BatchCount != 16 {
			t.Errorf("a %d-byte body: %s %+v", len(big), resp.Status, sc)
		}
		// A body declared over the limit is refused before it is sent: the
		// request goes out without one.
		host := strings.TrimPrefix(e.srv.URL, "http://")
		conn, err := net.Dial("tcp", host)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		_ = conn.SetDeadline(time.Now().Add(30 * time.Second))
		fmt.Fprintf(conn, "POST /api/v1/scatters HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n",
			host, e.srv.AdminKey, service.MaxScatterRequestBytes+1)
		resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var body errorBody
		if err := jsonDecode(resp, &body); err != nil || resp.StatusCode != http.StatusRequestEntityTooLarge ||
			!strings.Contains(body.Error, fmt.Sprintf("over %d bytes", service.MaxScatterRequestBytes)) {
			t.Errorf("a body declared %d bytes: %s %q %v", service.MaxScatterRequestBytes+1, resp.Status, body.Error, err)
		}
	})

	t.Run("a tightened limit", func(t *testing.T) {
		const limit = 1 << 10
		httpapi.SetTestHooks(t, httpapi.TestHooks{ScatterBodyBytes: limit})
		e := start(t)
		body := func(n int) string { // a scatter body of exactly n bytes
			head, tail := `{"queue":"held","script":"true","batches":[["`, `"]]}`
			return head + strings.Repeat("x", n-len(head)-len(tail)) + tail
		}
		var sc jobjson.Scatter
		if resp := e.post(t, e.srv.URL+"/api/v1/scatters", body(limit), &sc); resp.StatusCode != http.StatusCreated {
			t.Errorf("a body of exactly the limit: %s", resp.Status)
		}
		for _, sized := range []bool{true, false} {
			var refused errorBody
			resp := e.postStream(t, e.srv.URL+"/api/v1/scatters", body(limit+1), sized, &refused)
			if resp.StatusCode != http.StatusRequestEntityTooLarge || !strings.Contains(refused.Error, fmt.Sprintf("over %d bytes", limit)) {
				t.Errorf("a body one byte over the limit (Content-Length sent: %v): %s %q", sized, resp.Status, refused.Error)
			}
		}
		var l jobjson.ScatterList
		if e.get(t, "/api/v1/scatters", &l); len(l.Scatters) != 1 {
			t.Errorf("%d scatters; want only the one within the limit", len(l.Scatters))
		}
	})
}

// createScatter posts a scatter body that must be taken and returns the
// scatter's id.
func (e *env) createScatter(t *testing.T, body string) string {
	t.Helper()
	var sc jobjson.Scatter
	if resp := e.post(t, e.srv.URL+"/api/v1/scatters", body, &sc); resp.StatusCode != http.StatusCreated {
		t.Fatalf("create %s: %s", body, resp.Status)
	}
	return sc.ScatterID
}

// waitScatter polls a scatter until it is final, for at most a minute.
func (e *env) waitScatter(t *testing.T, id string) jobjson.Scatter {
	t.Helper()
	deadline := time.After(time.Minute)
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		var sc jobjson.Scatter
		if resp := e.get(t, "/api/v1/scatters/"+id, &sc); resp.StatusCode != http.StatusOK {
			t.Fatalf("get scatter %s: %s", id, resp.Status)
		}
		switch sc.State {
		case "succeeded", "failed", "cancelled":
			return sc
		}
		select {
		case <-deadline:
			t.Fatalf("scatter %s did not end within a minute: %+v", id, sc)
		case <-tick.C:
		}
	}
}

// postStream posts body with the server's admin key, with its length
// declared or (sized false) sent chunked, so that the server learns it only
// by reading.
func (e *env) postStream(t *testing.T, u, body string, sized bool, out any) *http.Response {
	t.Helper()
	var r io.Reader = strings.NewReader(body)
	if !sized {
		r = io.MultiReader(r) // a reader whose length http.NewRequest cannot tell
	}
	req, err := http.NewRequest(http.MethodPost, u, r)
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

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// A failed scatter names its failed job; POST .../redrive runs that batch
// again as a new job, and answers a scatter no one knows with 404.
func TestScatterRedrive(t *testing.T) {
	t.Parallel()
	e := start(t)
	spooltest.NewWorker(t, e.srv, worker.Config{Concurrency: 2})
	id := e.createScatter(t, `{"script": "exit 1", "batches": [[1]]}`)
	sc := e.waitScatter(t, id)
	if sc.State != "failed" || len(sc.FailedJobIDs) != 1 || sc.FailedJobIDs[0] != id+".0" || !strings.Contains(sc.Error, "failed jobs: "+id+".0") {
		t.Fatalf("failed scatter: %+v", sc)
	}
	var again jobjson.Scatter
	if resp := e.post(t, e.srv.URL+"/api/v1/scatters/"+id+"/redrive", "", &again); resp.StatusCode != http.StatusOK ||
		again.State != "running" || again.RedriveCount != 1 || len(again.FailedJobIDs) != 0 {
		t.Fatalf("redrive: %s %+v", resp.Status, again)
	}
	sc = e.waitScatter(t, id)
	if sc.State != "failed" || len(sc.FailedJobIDs) != 1 || sc.FailedJobIDs[0] != id+".0.r1" {
		t.Fatalf("redriven scatter, failed again: %+v", sc)
	}
	var refusal map[string]any
	if resp := e.post(t, e.srv.URL+"/api/v1/scatters/0190c3a2-0000-7000-8000-000000000000/redrive", "", &refusal); resp.StatusCode != http.StatusNotFound {
		t.Fatalf("redrive of an unknown scatter: %s %v", resp.Status, refusal)
	}
}
