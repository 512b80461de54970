package httpapi_test

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/coder/websocket"

	"github.com/spool-run/spool/internal/httpapi"
	"github.com/spool-run/spool/internal/jobjson"
	"github.com/spool-run/spool/spooltest"
)

type errorBody struct {
	Error string `json:"error"`
}

// Unknown jobs and scatters are 404 and malformed parameters 400, each
// with a message that names the problem; oversized limits of jobs are
// capped, not refused (a scatter's page_size is the core's to bound).
func TestBadInput(t *testing.T) {
	t.Parallel()
	e := start(t)
	job := spooltest.RunJob(t, e.srv, spooltest.Seq(1, 10050)...)
	id := job.ID
	unknown := "01900000-0000-7000-8000-000000000000"
	cases := []struct {
		method, path string
		status       int
		mention      string // in the error message
	}{
		{"GET", "/api/v1/jobs/" + unknown, 404, unknown},
		{"GET", "/api/v1/jobs/" + unknown + "/logs", 404, unknown},
		{"GET", "/api/v1/jobs/" + unknown + "/logs/ws", 404, unknown},
		{"POST", "/api/v1/jobs/" + unknown + "/cancel", 404, unknown},
		{"GET", "/api/v1/jobs/" + strings.Repeat("x", 500), 404, "not found"},
		{"GET", "/api/v1/jobs/" + id + "/logs?limit=abc", 400, "limit"},
		{"GET", "/api/v1/jobs/" + id + "/logs?limit=0", 400, "limit"},
		{"GET", "/api/v1/jobs/" + id + "/logs?limit=-5", 400, "limit"},
		{"GET", "/api/v1/jobs/" + id + "/logs?limit=1&limit=2", 400, "once"},
		{"GET", "/api/v1/jobs/" + id + "/logs?after_line=-1", 400, "after_line"},
		{"GET", "/api/v1/jobs/" + id + "/logs?after_line=1.5", 400, "after_line"},
		{"GET", "/api/v1/jobs/" + id + "/logs?after_line=99999999999999999999", 400, "after_line"},
		{"GET", "/api/v1/jobs/" + id + "/logs?before_line=0", 400, "before_line"},
		{"GET", "/api/v1/jobs/" + id + "/logs?after_line=10&before_line=10", 400, "greater than after_line"},
		{"GET", "/api/v1/jobs/" + id + "/logs?after_line=10&before_line=3", 400, "greater than after_line"},
		{"GET", "/api/v1/jobs/" + id + "/logs?since=10m", 400, "since=\"10m\": want a time in RFC 3339"},
		{"GET", "/api/v1/jobs/" + id + "/logs?until=2026-11-27", 400, "until=\"2026-11-27\": want a time in RFC 3339"},
		{"GET", "/api/v1/jobs/" + id + "/logs?since=2026-11-27T09:00:00+01:00", 400, "%2B"}, // a + in a query is a space
		{"GET", "/api/v1/jobs/" + id + "/logs?since=2026-11-27T09:00:00Z&since=2026-11-27T09:00:00Z", 400, "once"},
		{"GET", "/api/v1/jobs/" + id + "/logs?since=2026-11-27T10:00:00Z&until=2026-11-27T09:00:00Z", 400, "until=2026-11-27T09:00:00Z is before since"},
		{"GET", "/api/v1/jobs/" + id + "/logs?wait=soon", 400, "wait=\"soon\": want how long to wait"},
		{"GET", "/api/v1/jobs/" + id + "/logs?wait=-1s", 400, "wait"},
		{"GET", "/api/v1/jobs/" + id + "/logs?wait=-2", 400, "wait"},
		{"GET", "/api/v1/jobs/" + id + "/logs?wait=NaN", 400, "wait"},
		{"GET", "/api/v1/jobs/" + id + "/logs?wait=1s&wait=2s", 400, "once"},
		{"GET", "/api/v1/jobs/" + unknown + "/logs?limit=x", 400, "limit"}, // parameters are checked first
		{"GET", "/api/v1/jobs/" + unknown + "/logs?wait=x", 400, "wait"},
		{"GET", "/api/v1/jobs/" + unknown + "/logs/search?q=x", 404, unknown},
		{"GET", "/api/v1/jobs/" + unknown + "/logs/raw", 404, unknown},
		{"GET", "/api/v1/jobs/" + id + "/logs/search", 400, "q is required"},
		{"GET", "/api/v1/jobs/" + id + "/logs/search?q=", 400, "q is required"},
		{"GET", "/api/v1/jobs/" + id + "/logs/search?q=" + strings.Repeat("x", 1001), 400, "at most 1000"},
		{"GET", "/api/v1/jobs/" + id + "/logs/search?q=a&q=b", 400, "once"},
		{"GET", "/api/v1/jobs/" + id + "/logs/search?q=%1b%5b31m", 400, "control characters"},
		{"GET", "/api/v1/jobs/" + id + "/logs/search?q=%ff", 400, "UTF-8"},
		{"GET", "/api/v1/jobs/" + id + "/logs/search?q=x&case=upper", 400, "case"},
		{"GET", "/api/v1/jobs/" + id + "/logs/search?q=x&limit=0", 400, "limit"},
		{"GET", "/api/v1/jobs/" + id + "/logs/search?q=x&limit=ten", 400, "limit"},
		{"GET", "/api/v1/jobs/" + id + "/logs/search?q=x&after_line=-1", 400, "after_line"},
		{"GET", "/api/v1/jobs/" + id + "/logs/search?q=x&after_line=1e3", 400, "after_line"},
		{"GET", "/api/v1/jobs/" + unknown + "/logs/search", 400, "q is required"}, // parameters are checked first
		{"POST", "/api/v1/jobs/" + id + "/logs/raw", 405, "GET"},
		{"GET", "/api/v1/jobs/" + id + "/logs/ws?last_line=-1", 400, "last_line"},
		{"GET", "/api/v1/jobs/" + id + "/logs/ws?last_line=five", 400, "last_line"},
		{"GET", "/api/v1/jobs?state=sleeping", 400, "state"},
		{"GET", "/api/v1/jobs?state=running,", 400, "state"},
		{"GET", "/api/v1/jobs?limit=none", 400, "limit"},
		{"GET", "/api/v1/jobs?cursor=not-a-cursor", 400, "cursor"},
		{"GET", "/api/v1/jobs?queue=%ff", 400, "queue"},
		{"GET", "/api/v1/scatters/" + unknown, 404, unknown},
		{"GET", "/api/v1/scatters/" + unknown + "/batches", 404, unknown},
		{"POST", "/api/v1/scatters/" + unknown + "/cancel", 404, unknown},
		{"GET", "/api/v1/scatters/not-a-scatter", 404, "not found"},
		{"GET", "/api/v1/scatters?page_size=abc", 400, "page_size"},
		{"GET", "/api/v1/scatters?page_size=501", 400, "page_size"},
		{"GET", "/api/v1/scatters?cursor=not-a-cursor", 400, "cursor"},
		{"GET", "/api/v1/scatters/" + unknown + "/batches?from=-1", 400, "from"},
		{"GET", "/api/v1/nothing", 404, "openapi.yaml"},
		{"PUT", "/api/v1/jobs/" + id, 405, "GET, DELETE"},
		{"DELETE", "/api/v1/jobs/" + unknown, 404, unknown},
		{"POST", "/api/v1/jobs/" + unknown + "/rerun", 404, unknown},
		{"POST", "/api/v1/queues/%ff/pause", 400, "queue"},
		{"POST", "/api/v1/queues/nosuch/pause", 404, `no queue is named "nosuch": the queues are default`},
		{"POST", "/api/v1/queues/nosuch/resume", 404, `no queue is named "nosuch": the queues are default`},
		{"GET", "/api/v1/queues/builds/pause", 405, "POST"},
		{"DELETE", "/api/v1/queues", 405, "GET"},
		{"GET", "/api/v1/jobs/" + id + "/cancel", 405, "POST"},
		{"DELETE", "/api/v1/scatters", 405, "GET, POST"},
		{"GET", "/api/v1/scatters/" + unknown + "/cancel", 405, "POST"},
	}
	for _, tc := range cases {
		t.Run(tc.method+" "+tc.path, func(t *testing.T) {
			var body errorBody
			resp := e.do(t, tc.method, e.srv.URL+tc.path, nil, &body)
			if resp.StatusCode != tc.status || !strings.Contains(body.Error, tc.mention) {
				t.Errorf("%s: %q; want %d mentioning %q", resp.Status, body.Error, tc.status, tc.mention)
			}
			if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
				t.Errorf("Content-Type %q", ct)
			}
			if tc.status == 405 && resp.Header.Get("Allow") == "" {
				t.Error("405 without Allow")
			}
		})
	}

	t.Run("oversized limit is capped", func(t *testing.T) {
		var p httpapi.LogPage
		e.get(t, "/api/v1/jobs/"+id+"/logs?limit=1000000", &p)
		if len(p.Events) != httpapi.MaxLogLimit || p.Pagination.Limit != httpapi.MaxLogLimit || !p.Pagination.HasMore || p.Pagination.NextAfterLine != 10000 {
			t.Errorf("limit=1000000: %d lines, pagination %+v; want the first %d and has_more", len(p.Events), p.Pagination, httpapi.MaxLogLimit)
		}
		var l jobjson.List
		if resp := e.get(t, "/api/v1/jobs?limit=1000000", &l); resp.StatusCode != http.StatusOK || len(l.Jobs) != 1 {
			t.Errorf("jobs?limit=1000000: %v, %d jobs", resp.Status, len(l.Jobs))
		}
	})

	t.Run("websocket from another site", func(t *testing.T) {
		_, resp, err := websocket.Dial(context.Background(), wsURL(e.srv.URL, id, 0),
			&websocket.DialOptions{HTTPHeader: http.Header{"Origin": {"https://evil.example"}}})
		if err == nil || resp == nil || resp.StatusCode != http.StatusForbidden {
			t.Errorf("cross-origin upgrade: %v, %v; want 403", resp, err)
		}
	})
}
