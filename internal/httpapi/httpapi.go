// Package httpapi serves spool over plain HTTP for browsers, curl and
// scripts: a JSON REST API for jobs and their logs (paginated by line
// number, searched, or downloaded whole as text), their artifacts (listed,
// downloaded with ranges, uploaded as streams) and scatters, a
// WebSocket that streams a job's log live and resumes from any line, and
// the OpenAPI document describing them (openapi.yaml).
//
// Every handler is a thin adapter over the service core: it parses the
// request, calls the core, and writes the answer as JSON. The core decides
// what is valid and what each failure is; this package only turns its error
// kinds into HTTP statuses. Logs are read through the core's feeds, so the
// stored part of a log and its live part meet without a gap or a repeat, and
// a slow reader only slows its own reads: nothing is queued for it and
// nothing is dropped.
package httpapi

import (
	"log/slog"
	"net/http"
	"net/url"
	"sync"
	"time"

	"github.com/spool-run/spool/internal/service"
)

// Options configure the API.
type Options struct {
	// Service is the core every handler calls. When it drains, every
	// WebSocket ends with 1012 (service restart) so clients reconnect,
	// elsewhere or later, with their last line: the HTTP server does not
	// do it for them, since a WebSocket is a hijacked connection, which
	// http.Server.Shutdown neither closes nor waits for.
	Service *service.Service
	// Log receives stream starts and ends (nil: discarded).
	Log *slog.Logger
	// PingInterval is how often a WebSocket is pinged, and how long a
	// connection may go without answering a ping or taking a message
	// before it is dropped (0: 20 s).
	PingInterval time.Duration
	// CORSOrigins are the other sites whose pages may open a WebSocket
	// (the server's own pages always may).
	CORSOrigins []string
}

const defaultPingInterval = 20 * time.Second

// api holds the handlers' shared state.
type api struct {
	Options
	// pageBytes bounds the output in a REST page of lines (0: the core's
	// bound; tests make it small).
	pageBytes int
	// searchScanLines bounds the lines one search call looks at (0: the
	// core's bound; tests make it small).
	searchScanLines int
	// scatterBodyBytes bounds the body of POST /api/v1/scatters, which
	// carries every batch (service.MaxScatterRequestBytes; tests make it
	// small).
	scatterBodyBytes int64
	// onFrame, when set (tests), sees the size of every lines frame sent.
	onFrame func(lines, bytes int)
	// originHosts are the hosts of CORSOrigins, as the WebSocket library
	// matches them.
	originHosts []string
	// streams counts the WebSocket streams running.
	streams streamSet
}

// testHooks let this package's tests observe and tighten the API of a real
// server started in the same process (see export_test.go): they are read
// when a server mounts the API. Zero outside those tests.
var testHooks struct {
	sync.Mutex
	onFrame          func(lines, bytes int)
	pageBytes        int
	searchScanLines  int
	pingInterval     time.Duration
	scatterBodyBytes int64
}

// route is one endpoint. The OpenAPI document must list exactly these
// (openapi_test.go checks both ways).
type route struct {
	method, path string
	handle       func(*api, http.ResponseWriter, *http.Request)
}

var routes = []route{
	{"GET", "/api/v1/jobs", (*api).listJobs},
	{"POST", "/api/v1/jobs/batch", (*api).enqueueJobs},
	{"GET", "/api/v1/jobs/{job_id}", (*api).getJob},
	{"DELETE", "/api/v1/jobs/{job_id}", (*api).deleteJob},
	{"POST", "/api/v1/jobs/{job_id}/cancel", (*api).cancelJob},
	{"POST", "/api/v1/jobs/{job_id}/rerun", (*api).rerunJob},
	{"GET", "/api/v1/jobs/{job_id}/logs", (*api).getLogs},
	{"GET", "/api/v1/jobs/{job_id}/logs/ws", (*api).streamLogs},
	{"GET", "/api/v1/jobs/{job_id}/logs/search", (*api).searchLogs},
	{"GET", "/api/v1/jobs/{job_id}/logs/raw", (*api).rawLog},
	{"GET", "/api/v1/jobs/{job_id}/stdin", (*api).jobStdin},
	{"POST", "/api/v1/uploads", (*api).upload},
	{"GET", "/api/v1/jobs/{job_id}/artifacts", (*api).listArtifacts},
	{"GET", "/api/v1/jobs/{job_id}/artifacts/{path...}", (*api).downloadArtifact},
	{"PUT", "/api/v1/jobs/{job_id}/artifacts/{path...}", (*api).uploadArtifact},
	{"POST", "/api/v1/ingest/firehose", (*api).ingestFirehose},
	{"POST", "/api/v1/ingest/lines", (*api).ingestLines},
	{"POST", "/api/v1/ingest/complete", (*api).completeSource},
	{"GET", "/api/v1/openapi.yaml", (*api).openAPI},
	{"GET", "/api/v1/queues", (*api).listQueues},
	{"POST", "/api/v1/queues/{name}/pause", (*api).pauseQueue},
	{"POST", "/api/v1/queues/{name}/resume", (*api).resumeQueue},
	{"POST", "/api/v1/queues/{name}/configure", (*api).configureQueue},
	{"GET", "/api/v1/schedules", (*api).listSchedules},
	{"POST", "/api/v1/schedules", (*api).createSchedule},
	{"GET", "/api/v1/schedules/{name}", (*api).getSchedule},
	{"DELETE", "/api/v1/schedules/{name}", (*api).deleteSchedule},
	{"POST", "/api/v1/schedules/{name}/pause", (*api).pauseSchedule},
	{"POST", "/api/v1/schedules/{name}/resume", (*api).resumeSchedule},
	{"GET", "/api/v1/scatters", (*api).listScatters},
	{"POST", "/api/v1/scatters", (*api).createScatter},
	{"GET", "/api/v1/scatters/{scatter_id}", (*api).getScatter},
	{"GET", "/api/v1/scatters/{scatter_id}/batches", (*api).listScatterBatches},
	{"POST", "/api/v1/scatters/{scatter_id}/cancel", (*api).cancelScatter},
	{"POST", "/api/v1/scatters/{scatter_id}/redrive", (*api).redriveScatter},
	{"GET", "/api/v1/session", (*api).whoami},
	{"POST", "/api/v1/session", (*api).login},
	{"DELETE", "/api/v1/session", (*api).logout},
	{"POST", "/api/v1/session/ticket", (*api).ticket},
}

// Routes lists the endpoints as "METHOD /path" patterns.
func Routes() []string {
	out := make([]string, len(routes))
	for i, rt := range routes {
		out[i] = rt.method + " " + rt.path
	}
	return out
}

// Register mounts the API on mux under /api/v1/.
//
// It returns a function that waits for the WebSocket streams to end:
// http.Server.Shutdown does not wait for hijacked connections, so the
// server calls it after draining and before closing the store.
func Register(mux *http.ServeMux, o Options) (wait func()) {
	a := newAPI(o)
	a.register(mux)
	return a.streams.wait
}

func newAPI(o Options) *api {
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	testHooks.Lock()
	defer testHooks.Unlock()
	if testHooks.pingInterval > 0 {
		o.PingInterval = testHooks.pingInterval
	}
	if o.PingInterval <= 0 {
		o.PingInterval = defaultPingInterval
	}
	a := &api{Options: o, pageBytes: testHooks.pageBytes, searchScanLines: testHooks.searchScanLines, onFrame: testHooks.onFrame,
		scatterBodyBytes: service.MaxScatterRequestBytes}
	if testHooks.scatterBodyBytes > 0 {
		a.scatterBodyBytes = testHooks.scatterBodyBytes
	}
	for _, origin := range o.CORSOrigins {
		if u, err := url.Parse(origin); err == nil && u.Host != "" {
			a.originHosts = append(a.originHosts, u.Host)
		}
	}
	return a
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
