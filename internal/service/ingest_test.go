package service_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/proto"

	"github.com/spool-run/spool"
	"github.com/spool-run/spool/client"
	spoolv1 "github.com/spool-run/spool/gen/spool/v1"
	"github.com/spool-run/spool/internal/ingest/ingesttest"
	"github.com/spool-run/spool/internal/store"
	"github.com/spool-run/spool/internal/store/backends/sqlitestore"
	"github.com/spool-run/spool/internal/store/storekit"
	"github.com/spool-run/spool/internal/wire"
	"github.com/spool-run/spool/server"
	"github.com/spool-run/spool/spooltest"
)

// post sends body to path with key (as Firehose does for the firehose
// endpoint, else as a bearer token) and decodes the JSON answer into out.
func post(t *testing.T, srv *spooltest.Server, path, key string, body []byte, out any) int {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, srv.URL+path, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if path == "/api/v1/ingest/firehose" {
		req.Header.Set("X-Amz-Firehose-Access-Key", key)
	} else {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	if out != nil {
		if err := json.Unmarshal(data, out); err != nil {
			t.Fatalf("POST %s answered %d %q: %v", path, resp.StatusCode, data, err)
		}
	}
	return resp.StatusCode
}

// cwEvents are CloudWatch events prefix-from..prefix-to with messages
// "<prefix> line <i>".
func cwEvents(prefix string, from, to int) []ingesttest.Event {
	var out []ingesttest.Event
	for i := from; i <= to; i++ {
		out = append(out, ingesttest.Event{ID: fmt.Sprintf("%s-%d", prefix, i), Timestamp: 1_700_000_000_000 + int64(i), Message: fmt.Sprintf("%s line %d", prefix, i)})
	}
	return out
}

func messagesOf(evs []ingesttest.Event) []string {
	out := make([]string, len(evs))
	for i, e := range evs {
		out[i] = e.Message
	}
	return out
}

// logLines reads a job's whole log through the client, as `spool logs` does.
func logLines(t *testing.T, c *client.Client, jobID string) []string {
	t.Helper()
	evs, err := c.ReadLog(context.Background(), jobID)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, ev := range evs {
		for _, l := range ev.Lines {
			out = append(out, l.Text)
		}
	}
	return out
}

// sourceJobs lists a source's jobs, newest first.
func sourceJobs(t *testing.T, c *client.Client, source string) []*spool.Job {
	t.Helper()
	jobs, _, err := c.JobsPage(context.Background(), client.ListParams{Source: source})
	if err != nil {
		t.Fatal(err)
	}
	return jobs
}

// TestIngestOnEveryStore: a Firehose delivery of two log streams opens a
// job for each, followed live; the same delivery again changes nothing;
// shippers' lines for the same source continue its log; completing the
// source ends its follower, the next events open a new job, and the log
// rebuilt from its events is the stored one.
func TestIngestOnEveryStore(t *testing.T) {
	onEveryStore(t, func(t *testing.T, srv *spooltest.Server) {
		ctx := context.Background()
		c := srv.Client()
		key := srv.Key(t, spool.RoleIngest)
		a, b := "/ecs/api:ecs/api/task-1", "/aws/lambda/resize:2026/11/25/[$LATEST]0a1b"
		delivery := ingesttest.FirehoseBody("req-1", 1_700_000_001_000,
			ingesttest.Record(ingesttest.DataMessage("/ecs/api", "ecs/api/task-1", cwEvents("a", 1, 120)...)),
			ingesttest.Record([]byte(ingesttest.ControlMessage)),
			ingesttest.Record(ingesttest.DataMessage("/aws/lambda/resize", "2026/11/25/[$LATEST]0a1b", cwEvents("b", 1, 3)...)))
		var answer struct {
			RequestID    string `json:"requestId"`
			Timestamp    int64  `json:"timestamp"`
			ErrorMessage string `json:"errorMessage"`
		}
		if code := post(t, srv, "/api/v1/ingest/firehose", key, delivery, &answer); code != http.StatusOK || answer.RequestID != "req-1" || answer.ErrorMessage != "" {
			t.Fatalf("delivery answered %d %+v", code, answer)
		}
		jobsA := sourceJobs(t, c, a)
		if len(jobsA) != 1 || len(sourceJobs(t, c, b)) != 1 {
			t.Fatalf("sources have %d and %d jobs, want one each", len(jobsA), len(sourceJobs(t, c, b)))
		}
		job := jobsA[0]
		if job.State != spool.Running || job.Params.External.Source != a || job.LineCount != 120 || job.Queue != "external" {
			t.Fatalf("source %s's job: %v", a, job)
		}
		stream := c.Events(ctx, job.ID, client.StreamOptions{Follow: true})
		followed := make(chan []string)
		go func() {
			var lines []string
			for ev, err := range stream.All() {
				if err != nil {
					t.Errorf("follow: %v", err)
					break
				}
				for _, l := range ev.Lines {
					lines = append(lines, l.Text)
				}
			}
			followed <- lines
		}()
		// Firehose retries: nothing changes.
		if code := post(t, srv, "/api/v1/ingest/firehose", key, delivery, &answer); code != http.StatusOK {
			t.Fatalf("repeated delivery answered %d %+v", code, answer)
		}
		// A shipper sends more of source a, some of it seen already.
		var sum struct {
			Events, Accepted, Duplicates int
			Sources                      []struct {
				Source string
				JobID  string `json:"job_id"`
			}
		}
		lines := ingesttest.Lines(
			ingesttest.Line{Source: a, ID: "a-120", Timestamp: 1, Message: "a line 120"},
			ingesttest.Line{Source: a, ID: "a-122", Timestamp: 2, Message: "a line 122"},
			ingesttest.Line{Source: a, ID: "a-121", Timestamp: 3, Message: "a line 121"},
			ingesttest.Line{Source: a, ID: "a-122", Timestamp: 2, Message: "a line 122"})
		if code := post(t, srv, "/api/v1/ingest/lines", key, lines, &sum); code != http.StatusOK || sum.Events != 4 || sum.Accepted != 2 || sum.Duplicates != 2 {
			t.Fatalf("lines answered %d %+v; want 4 events, 2 accepted", code, sum)
		}
		want := append(messagesOf(cwEvents("a", 1, 120)), "a line 122", "a line 121")
		if got := logLines(t, c, job.ID); !slices.Equal(got, want) {
			t.Fatalf("source a's log has %d lines, want %d in the order first accepted", len(got), len(want))
		}
		done, err := c.CompleteSource(ctx, a)
		if err != nil {
			t.Fatal(err)
		}
		if done.State != spool.Succeeded || done.ID != job.ID {
			t.Fatalf("completed: %v", done)
		}
		select {
		case got := <-followed:
			if !slices.Equal(got, want) {
				t.Fatalf("the follower saw %d lines, want %d", len(got), len(want))
			}
		case <-time.After(time.Minute):
			t.Fatal("the follower did not end with the job")
		}
		if _, err := c.CompleteSource(ctx, a); !errors.Is(err, spool.ErrNotFound) {
			t.Fatalf("completing a source with no open job: %v, want not found", err)
		}
		again, err := c.CompleteExternal(ctx, job.ID)
		if err != nil || again.State != spool.Succeeded {
			t.Fatalf("completing an ended job again: %v, %v", again, err)
		}
		// Past events reopen nothing; new ones open a new job.
		if code := post(t, srv, "/api/v1/ingest/firehose", key, delivery, &answer); code != http.StatusOK || len(sourceJobs(t, c, a)) != 1 {
			t.Fatalf("an old delivery after the end: %d, %d jobs", code, len(sourceJobs(t, c, a)))
		}
		next := ingesttest.FirehoseBody("req-2", 1_700_000_002_000,
			ingesttest.Record(ingesttest.DataMessage("/ecs/api", "ecs/api/task-1", cwEvents("a", 119, 125)...)))
		if code := post(t, srv, "/api/v1/ingest/firehose", key, next, &answer); code != http.StatusOK {
			t.Fatalf("next delivery: %d %+v", code, answer)
		}
		jobsA = sourceJobs(t, c, a)
		if len(jobsA) != 2 || jobsA[1].ID != job.ID {
			t.Fatalf("source a's jobs after new events: %v", jobsA)
		}
		if got := logLines(t, c, jobsA[0].ID); !slices.Equal(got, messagesOf(cwEvents("a", 123, 125))) {
			t.Fatalf("the new job's log: %q", got)
		}
		r, err := c.RebuildLog(ctx, job.ID)
		if err != nil {
			t.Fatal(err)
		}
		if r.Events != 122 || r.Lines != 122 || r.Items != 4 || r.ItemsChanged != 0 {
			t.Fatalf("rebuild: %v; want 122 events in 4 items, none changed", r)
		}
	})
}

// TestIngestKeysAndCancel: an ingest key sends and ends sources and does
// nothing else; a cancelled external job ends at once; EnqueueJob cannot
// make an external job.
func TestIngestKeysAndCancel(t *testing.T) {
	srv := spooltest.NewServer(t, spooltest.Config{Server: func(c *server.Config) { c.Store.Type = "memory" }})
	ctx := context.Background()
	key := srv.Key(t, spool.RoleIngest)
	ing := srv.Client(client.Config{APIKey: key})
	lines := ingesttest.Lines(ingesttest.Line{Source: "svc", ID: "1", Timestamp: 1, Message: "hello"})
	if code := post(t, srv, "/api/v1/ingest/lines", key, lines, nil); code != http.StatusOK {
		t.Fatalf("ingest key sending lines: %d", code)
	}
	if code := post(t, srv, "/api/v1/ingest/lines", srv.Key(t, spool.RoleSubmit), lines, nil); code != http.StatusForbidden {
		t.Fatalf("submit key sending lines: %d, want 403", code)
	}
	if code := post(t, srv, "/api/v1/ingest/lines", key, lines, nil); code != http.StatusOK {
		t.Fatalf("sending the same line again: %d", code)
	}
	if code := post(t, srv, "/api/v1/ingest/lines", key, []byte("{}\n"), nil); code != http.StatusBadRequest {
		t.Fatalf("sending a bad line: %d", code)
	}
	wantMetrics(t, srv, `spool_ingest_events_total{format="lines",outcome="accepted"} 1`, `spool_ingest_events_total{format="lines",outcome="duplicate"} 1`,
		`spool_ingest_requests_total{format="lines",outcome="stored"} 2`, `spool_ingest_requests_total{format="lines",outcome="refused"} 1`,
		`spool_ingest_jobs_opened_total 1`)
	if _, _, err := ing.JobsPage(ctx, client.ListParams{}); !errors.Is(err, spool.ErrPermissionDenied) {
		t.Fatalf("ingest key listing jobs: %v, want permission denied", err)
	}
	if _, _, err := ing.Submit(ctx, client.SubmitParams{Argv: []string{"true"}}); !errors.Is(err, spool.ErrPermissionDenied) {
		t.Fatalf("ingest key submitting: %v, want permission denied", err)
	}
	if _, err := ing.RebuildLog(ctx, "x"); !errors.Is(err, spool.ErrPermissionDenied) {
		t.Fatalf("ingest key rebuilding: %v, want permission denied", err)
	}
	c := srv.Client()
	job := sourceJobs(t, c, "svc")[0]
	cancelled, err := c.Cancel(ctx, job.ID, "wrong service")
	if err != nil {
		t.Fatal(err)
	}
	if cancelled.State != spool.Cancelled || cancelled.Result.Error != "cancelled: wrong service" {
		t.Fatalf("cancelled external job: %v", cancelled)
	}
	command, _, err := c.Submit(ctx, client.SubmitParams{Argv: []string{"true"}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.RebuildLog(ctx, command.ID); !errors.Is(err, spool.ErrInvalidArgument) {
		t.Fatalf("rebuilding a command's log: %v, want invalid argument", err)
	}
	if _, err := c.CompleteExternal(ctx, command.ID); !errors.Is(err, spool.ErrInvalidArgument) {
		t.Fatalf("completing a command as a source: %v, want invalid argument", err)
	}
	if _, err := ing.CompleteSource(ctx, "svc"); !errors.Is(err, spool.ErrNotFound) {
		t.Fatalf("completing a cancelled source: %v, want not found", err)
	}
	external := &spoolv1.EnqueueJobRequest{Params: &spoolv1.JobParams{External: &spoolv1.External{Source: "svc"}}}
	rpc, err := wire.Dial(srv.URL, wire.Options{APIKey: srv.AdminKey})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := rpc.EnqueueJob(ctx, connect.NewRequest(external)); connect.CodeOf(err) != connect.CodeInvalidArgument {
		t.Fatalf("enqueueing an external job: %v, want invalid argument", err)
	}
}

// TestIdleSourceEnds: a source that sends nothing for the idle timeout has
// its job ended, with a note that says why.
func TestIdleSourceEnds(t *testing.T) {
	srv := spooltest.NewServer(t, spooltest.Config{Server: func(c *server.Config) {
		c.Store.Type = "memory"
		c.Ingest.IdleTimeout = time.Second
	}})
	key := srv.Key(t, spool.RoleIngest)
	lines := ingesttest.Lines(ingesttest.Line{Source: "quiet", ID: "1", Timestamp: 1, Message: "only line"})
	if code := post(t, srv, "/api/v1/ingest/lines", key, lines, nil); code != http.StatusOK {
		t.Fatalf("lines: %d", code)
	}
	job := srv.WaitJob(t, sourceJobs(t, srv.Client(), "quiet")[0].ID)
	if job.State != spool.Succeeded || len(job.Notes) != 1 {
		t.Fatalf("idle source's job: %v", job)
	}
	if ended := job.Result.FinishedAt.Sub(job.CreatedAt); ended < time.Second {
		t.Fatalf("the job ended %s after its only event, before the idle timeout", ended)
	}
}

// TestRebuildRepairsTheLog: a stored log that lost a batch and had another
// changed is put right by a rebuild from its accepted events.
func TestRebuildRepairsTheLog(t *testing.T) {
	srv := spooltest.NewServer(t)
	ctx := context.Background()
	key := srv.Key(t, spool.RoleIngest)
	for from := 1; from <= 200; from += 30 {
		delivery := ingesttest.FirehoseBody(fmt.Sprint(from), 1,
			ingesttest.Record(ingesttest.DataMessage("g", "s", cwEvents("e", from, min(from+29, 200))...)))
		if code := post(t, srv, "/api/v1/ingest/firehose", key, delivery, nil); code != http.StatusOK {
			t.Fatalf("delivery: %d", code)
		}
	}
	c := srv.Client()
	job := sourceJobs(t, c, "g:s")[0]
	want := logLines(t, c, job.ID)
	// Another hand on the same database damages the stored log.
	st, err := sqlitestore.Open(ctx, filepath.Join(srv.Config().Server.DataDir, "spool.db"), sqlitestore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	var items []*spoolv1.JobEvent
	for ev, err := range storekit.Read(ctx, st, store.ReadRequest{JobID: job.ID, FromSequence: 1}) {
		if err != nil {
			t.Fatal(err)
		}
		items = append(items, ev)
	}
	damaged := append(slices.Clone(items[:2]), items[3:]...)
	damaged[0] = proto.CloneOf(damaged[0])
	damaged[0].GetOutputBatch().GetOutputs()[4].Output = []byte("tampered")
	if err := st.ReplaceLog(ctx, job.ID, damaged); err != nil {
		t.Fatal(err)
	}
	if got := logLines(t, c, job.ID); slices.Equal(got, want) {
		t.Fatal("the damage did not show")
	}
	r, err := c.RebuildLog(ctx, job.ID)
	if err != nil {
		t.Fatal(err)
	}
	if r.ItemsChanged != 2 || r.Items != int64(len(items)) {
		t.Fatalf("rebuild of a damaged log: %v; want 2 items changed of %d", r, len(items))
	}
	if got := logLines(t, c, job.ID); !slices.Equal(got, want) {
		t.Fatal("the rebuilt log differs from the log before the damage")
	}
}
