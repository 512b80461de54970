package httpapi

import (
	"strings"
	"testing"
	"time"

	"github.com/spool-run/spool/internal/logsearch"
	"github.com/spool-run/spool/internal/service"
)

// TestHooks adjust the API of servers started after SetTestHooks.
type TestHooks struct {
	// OnFrame is told the size of every lines frame sent.
	OnFrame func(lines, bytes int)
	// PageBytes replaces the byte budget of a REST page of lines.
	PageBytes int
	// SearchScanLines replaces the lines one search call may look at.
	SearchScanLines int
	// PingInterval replaces the WebSocket keepalive interval.
	PingInterval time.Duration
	// ScatterBodyBytes replaces the body limit of POST /api/v1/scatters.
	ScatterBodyBytes int64
}

// SetTestHooks applies h to the servers the test starts from now on, until
// it ends. Tests that use it must not run in parallel.
func SetTestHooks(t testing.TB, h TestHooks) {
	testHooks.Lock()
	defer testHooks.Unlock()
	testHooks.onFrame, testHooks.pageBytes, testHooks.pingInterval, testHooks.scatterBodyBytes = h.OnFrame, h.PageBytes, h.PingInterval, h.ScatterBodyBytes
	testHooks.searchScanLines = h.SearchScanLines
	t.Cleanup(func() {
		testHooks.Lock()
		defer testHooks.Unlock()
		testHooks.onFrame, testHooks.pageBytes, testHooks.pingInterval, testHooks.scatterBodyBytes = nil, 0, 0, 0
		testHooks.searchScanLines = 0
	})
}

// Frame caps, for tests that check them.
const (
	MaxFrameLines  = maxFrameLines
	MaxFrameBytes  = maxFrameBytes
	MaxLogLimit    = service.MaxPageLines
	MaxSearchLimit = logsearch.MaxMatches
)

// RouteKeys lists the routes as "METHOD path".
func RouteKeys() []string {
	var out []string
	for _, r := range routes {
		// OpenAPI has no "rest of the path" parameter: {path...} is {path}.
		out = append(out, r.method+" "+strings.Replace(r.path, "...}", "}", 1))
	}
	return out
}

// CreateScatterRequest is the body of POST /api/v1/scatters, for the
// OpenAPI test to compare with its schema.
type CreateScatterRequest = createScatterRequest

// EnqueueJobsRequest and EnqueueJobsResponse are the body of and the
// answer to POST /api/v1/jobs/batch, and EnqueueJob and EnqueueResult one
// job of each, for the OpenAPI test to compare with their schemas.
type (
	EnqueueJobsRequest  = enqueueJobsRequest
	EnqueueJob          = enqueueJob
	EnqueueJobsResponse = enqueueJobsResponse
	EnqueueResult       = enqueueResult
)

// The bodies and answers of the schedules' and a queue's configuration
// routes, for the OpenAPI test to compare with their schemas.
type (
	CreateScheduleRequest = scheduleBody
	Schedule              = scheduleView
	ScheduleList          = scheduleList
	ConfigureQueueRequest = configureQueueBody
)
