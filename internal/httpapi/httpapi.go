// Package httpapi serves spool over plain HTTP for browsers, curl and
// scripts: a JSON REST API for jobs and their logs (paginated by line
// number), a WebSocket that streams a job's log live and resumes from any
// line, and the OpenAPI document describing both (openapi.yaml).
//
// Logs are read with store.Feed, so the stored part of a log and its live
// part meet without a gap or a repeat, and a slow reader only slows its own
// reads: nothing is queued for it and nothing is dropped (DESIGN principle 2).
package httpapi

import (
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/spool-run/spool/internal/store"
)

// Options configure the API.
type Options struct {
	// Store holds the jobs and their logs.
	Store store.JobStore
	// Log receives request failures and stream starts and ends (nil:
	// discarded).
	Log *slog.Logger
	// Drain, when closed, ends every WebSocket with 1012 (service restart)
	// so clients reconnect, elsewhere or later, with their last line. The
	// HTTP server does not do it for them: a WebSocket is a hijacked
	// connection, which http.Server.Shutdown neither closes nor waits for.
	Drain <-chan struct{}
	// Watch, when set, registers a live follower of a job and returns the
	// function that removes it, so the job's worker flushes promptly while
	// someone watches (DESIGN principle 9).
	Watch func(jobID string) (remove func())
	// PingInterval is how often a WebSocket is pinged, and how long a ping
	// may go unanswered before the connection is dropped (0: 20 s).
	PingInterval time.Duration
}

const defaultPingInterval = 20 * time.Second

// api holds the handlers' shared state.
type api struct {
	Options
	// pageBytes bounds the text of a REST page of lines (maxPageBytes;
	// tests make it small).
	pageBytes int
	// onFrame, when set (tests), sees the size of every lines frame sent.
	onFrame func(lines, bytes int)
	// streams counts the WebSocket streams running.
	streams sync.WaitGroup
}

// route is one endpoint. The OpenAPI document must list exactly these
// (openapi_test.go checks both ways).
type route struct {
	method, path string
	handle       func(*api, http.ResponseWriter, *http.Request)
}

var routes = []route{
	{"GET", "/api/v1/jobs", (*api).listJobs},
	{"GET", "/api/v1/jobs/{job_id}", (*api).getJob},
	{"POST", "/api/v1/jobs/{job_id}/cancel", (*api).cancelJob},
	{"GET", "/api/v1/jobs/{job_id}/logs", (*api).getLogs},
	{"GET", "/api/v1/jobs/{job_id}/logs/ws", (*api).streamLogs},
	{"GET", "/api/v1/openapi.yaml", (*api).openAPI},
}

// Register mounts the API on mux under /api/v1/.
//
// It returns a function that waits for the WebSocket streams to end:
// http.Server.Shutdown does not wait for hijacked connections, so the
// server calls it after draining and before closing the store.
func Register(mux *http.ServeMux, o Options) (wait func()) {
	a := newAPI(o)
	a.register(mux)
	return a.streams.Wait
}

func newAPI(o Options) *api {
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	if o.PingInterval <= 0 {
		o.PingInterval = defaultPingInterval
	}
	return &api{Options: o, pageBytes: maxPageBytes}
}

func (a *api) register(mux *http.ServeMux) {
	// paths matches a request's path alone, so a request for a known path
	// with the wrong method is told which methods it takes.
	paths := http.NewServeMux()
	allowed := map[string]string{}
	for _, rt := range routes {
		h := rt.handle
		mux.HandleFunc(rt.method+" "+rt.path, func(w http.ResponseWriter, r *http.Request) { h(a, w, r) })
		if allowed[rt.path] == "" {
			paths.HandleFunc(rt.path, http.NotFound)
			allowed[rt.path] = rt.method
		} else {
			allowed[rt.path] += ", " + rt.method
		}
	}
	mux.HandleFunc("/api/", func(w http.ResponseWriter, r *http.Request) {
		if _, pattern := paths.Handler(r); pattern != "" {
			w.Header().Set("Allow", allowed[pattern])
			writeError(w, r, a.Log, errorf(http.StatusMethodNotAllowed, "%s %s: this endpoint takes %s", r.Method, r.URL.Path, allowed[pattern]))
			return
		}
		writeError(w, r, a.Log, errorf(http.StatusNotFound, "no endpoint %s %s; the endpoints are listed in /api/v1/openapi.yaml", r.Method, r.URL.Path))
	})
}
