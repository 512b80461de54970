package assembly_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"

	"connectrpc.com/connect"
	"github.com/coder/websocket"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"

	"github.com/spool-run/spool"
	"github.com/spool-run/spool/client"
	spoolv1 "github.com/spool-run/spool/gen/spool/v1"
	"github.com/spool-run/spool/gen/spool/v1/spoolv1connect"
	"github.com/spool-run/spool/internal/httpapi"
	"github.com/spool-run/spool/server"
	"github.com/spool-run/spool/spooltest"
)

// Who may call what, on every entrance. Each RPC and route has an entry
// saying what it needs and how to call it; every one is called with no
// key, a revoked key, a key of a role without the right, a request to a
// foreign Host (DNS rebinding), and a key with the right, which must get
// past the door. A new RPC or route without an entry fails the test.

// caller is who makes a call in the table: a key (or none) and the Host
// the request is sent to ("" for the server's own address).
type caller struct {
	key, host string
}

// fixture is what the calls work on.
type fixture struct {
	srv      *spooltest.Server
	jobID    string // a queued job of queue "q", for reads and cancels
	token    string // a live lease's task token, of a job of queue "q"
	cancelID string // a job the allowed caller may cancel
	// scatterID is a scatter of queue "q" for reads, scatterCancelID one
	// the allowed caller may cancel.
	scatterID, scatterCancelID string
}

// need names what an entry requires: a role that has the right, a role
// that does not, and what that one gets.
type need struct {
	allowed  string // role of a key that may
	denied   string // role of a key that may not ("worker-other": a worker key limited to another queue)
	deniedAs int    // the HTTP status the denied key gets
}

var (
	public     = need{}
	forAdmin   = need{"admin", "submit", http.StatusForbidden}
	forSubmit  = need{"submit", "read", http.StatusForbidden}
	forRead    = need{"read", "worker-other", http.StatusNotFound} // every role reads; a worker key only its queues' jobs
	forList    = need{"read", "worker-other", http.StatusForbidden}
	forWork    = need{"worker", "submit", http.StatusForbidden}
	forMetrics = need{"read", "worker", http.StatusForbidden}
	forIngest  = need{"ingest", "submit", http.StatusForbidden}
	// Listing queues: every role that reads; a log shipper's key does not.
	forQueues = need{"read", "ingest", http.StatusForbidden}
	// Reading schedules: every role that reads jobs; a log shipper's key
	// does not.
	forSchedules = need{"read", "ingest", http.StatusForbidden}
	// Any valid key may sign in and say who it is: no role is refused.
	forAnyKey = need{allowed: "worker"}
)

// entry is one RPC or route.
type entry struct {
	need need
	// call makes the call as c and returns the HTTP status it got (for an
	// RPC: the status of its Connect code).
	call func(t *testing.T, f *fixture, c caller) int
}

// rpcs lists every RPC, by procedure.
var rpcs = map[string]entry{
	spoolv1connect.JobServiceEnqueueJobProcedure: {forSubmit, rpc(func(ctx context.Context, j spoolv1connect.JobServiceClient, _ spoolv1connect.KeyServiceClient, f *fixture) error {
		_, err := j.EnqueueJob(ctx, connect.NewRequest(&spoolv1.EnqueueJobRequest{Queue: "q", Params: &spoolv1.JobParams{Argv: []string{"true"}}}))
		return err
	})},
	spoolv1connect.JobServiceEnqueueJobsProcedure: {forSubmit, rpc(func(ctx context.Context, j spoolv1connect.JobServiceClient, _ spoolv1connect.KeyServiceClient, f *fixture) error {
		_, err := j.EnqueueJobs(ctx, connect.NewRequest(&spoolv1.EnqueueJobsRequest{Jobs: []*spoolv1.EnqueueJobRequest{{Queue: "q", Params: &spoolv1.JobParams{Argv: []string{"true"}}}}}))
		return err
	})},
	spoolv1connect.JobServiceGetJobProcedure: {forRead, rpc(func(ctx context.Context, j spoolv1connect.JobServiceClient, _ spoolv1connect.KeyServiceClient, f *fixture) error {
		_, err := j.GetJob(ctx, connect.NewRequest(&spoolv1.GetJobRequest{JobId: f.jobID}))
		return err
	})},
	spoolv1connect.JobServiceListJobsProcedure: {forList, rpc(func(ctx context.Context, j spoolv1connect.JobServiceClient, _ spoolv1connect.KeyServiceClient, f *fixture) error {
		_, err := j.ListJobs(ctx, connect.NewRequest(&spoolv1.ListJobsRequest{}))
		return err
	})},
	spoolv1connect.JobServiceCancelJobProcedure: {forSubmit, rpc(func(ctx context.Context, j spoolv1connect.JobServiceClient, _ spoolv1connect.KeyServiceClient, f *fixture) error {
		_, err := j.CancelJob(ctx, connect.NewRequest(&spoolv1.CancelJobRequest{JobId: f.cancelID}))
		return err
	})},
	// Rerunning or deleting the fixture's queued job is refused as not
	// finished (409): past the door.
	spoolv1connect.JobServiceRerunJobProcedure: {forSubmit, rpc(func(ctx context.Context, j spoolv1connect.JobServiceClient, _ spoolv1connect.KeyServiceClient, f *fixture) error {
		_, err := j.RerunJob(ctx, connect.NewRequest(&spoolv1.RerunJobRequest{JobId: f.jobID}))
		return err
	})},
	spoolv1connect.JobServiceDeleteJobProcedure: {forAdmin, rpc(func(ctx context.Context, j spoolv1connect.JobServiceClient, _ spoolv1connect.KeyServiceClient, f *fixture) error {
		_, err := j.DeleteJob(ctx, connect.NewRequest(&spoolv1.DeleteJobRequest{JobId: f.jobID}))
		return err
	})},
	spoolv1connect.QueueServiceListQueuesProcedure: {forQueues, queueRPC(func(ctx context.Context, q spoolv1connect.QueueServiceClient, f *fixture) error {
		_, err := q.ListQueues(ctx, connect.NewRequest(&spoolv1.ListQueuesRequest{}))
		return err
	})},
	spoolv1connect.QueueServicePauseQueueProcedure: {forAdmin, queueRPC(func(ctx context.Context, q spoolv1connect.QueueServiceClient, f *fixture) error {
		_, err := q.PauseQueue(ctx, connect.NewRequest(&spoolv1.PauseQueueRequest{Name: "table-paused"}))
		return err
	})},
	spoolv1connect.QueueServiceResumeQueueProcedure: {forAdmin, queueRPC(func(ctx context.Context, q spoolv1connect.QueueServiceClient, f *fixture) error {
		_, err := q.ResumeQueue(ctx, connect.NewRequest(&spoolv1.ResumeQueueRequest{Name: "table-paused"}))
		return err
	})},
	spoolv1connect.QueueServiceConfigureQueueProcedure: {forAdmin, queueRPC(func(ctx context.Context, q spoolv1connect.QueueServiceClient, f *fixture) error {
		_, err := q.ConfigureQueue(ctx, connect.NewRequest(&spoolv1.ConfigureQueueRequest{Name: "table-configured"}))
		return err
	})},
	spoolv1connect.ScheduleServiceCreateScheduleProcedure: {forSubmit, scheduleRPC(func(ctx context.Context, s spoolv1connect.ScheduleServiceClient, f *fixture) error {
		_, err := s.CreateSchedule(ctx, connect.NewRequest(&spoolv1.CreateScheduleRequest{Schedule: &spoolv1.Schedule{Name: "table",
			Cron: "@hourly", Job: &spoolv1.EnqueueJobRequest{Queue: "q", Params: &spoolv1.JobParams{Argv: []string{"true"}}}}}))
		return err
	})},
	spoolv1connect.ScheduleServiceGetScheduleProcedure: {forSchedules, scheduleRPC(func(ctx context.Context, s spoolv1connect.ScheduleServiceClient, f *fixture) error {
		_, err := s.GetSchedule(ctx, connect.NewRequest(&spoolv1.GetScheduleRequest{Name: "table"}))
		return err
	})},
	spoolv1connect.ScheduleServiceListSchedulesProcedure: {forSchedules, scheduleRPC(func(ctx context.Context, s spoolv1connect.ScheduleServiceClient, f *fixture) error {
		_, err := s.ListSchedules(ctx, connect.NewRequest(&spoolv1.ListSchedulesRequest{}))
		return err
	})},
	spoolv1connect.ScheduleServicePauseScheduleProcedure: {forSubmit, scheduleRPC(func(ctx context.Context, s spoolv1connect.ScheduleServiceClient, f *fixture) error {
		_, err := s.PauseSchedule(ctx, connect.NewRequest(&spoolv1.PauseScheduleRequest{Name: "table"}))
		return err
	})},
	spoolv1connect.ScheduleServiceResumeScheduleProcedure: {forSubmit, scheduleRPC(func(ctx context.Context, s spoolv1connect.ScheduleServiceClient, f *fixture) error {
		_, err := s.ResumeSchedule(ctx, connect.NewRequest(&spoolv1.ResumeScheduleRequest{Name: "table"}))
		return err
	})},
	spoolv1connect.ScheduleServiceDeleteScheduleProcedure: {forSubmit, scheduleRPC(func(ctx context.Context, s spoolv1connect.ScheduleServiceClient, f *fixture) error {
		_, err := s.DeleteSchedule(ctx, connect.NewRequest(&spoolv1.DeleteScheduleRequest{Name: "no-such-schedule"}))
		return err
	})},
	spoolv1connect.JobServiceStreamEventsProcedure: {forRead, rpc(func(ctx context.Context, j spoolv1connect.JobServiceClient, _ spoolv1connect.KeyServiceClient, f *fixture) error {
		s, err := j.StreamEvents(ctx, connect.NewRequest(&spoolv1.StreamEventsRequest{JobId: f.jobID}))
		if err != nil {
			return err
		}
		defer s.Close()
		for s.Receive() {
		}
		return s.Err()
	})},
	spoolv1connect.JobServiceDequeueJobsProcedure: {forWork, rpc(func(ctx context.Context, j spoolv1connect.JobServiceClient, _ spoolv1connect.KeyServiceClient, f *fixture) error {
		_, err := j.DequeueJobs(ctx, connect.NewRequest(&spoolv1.DequeueJobsRequest{Queue: "empty", MaxJobs: 1, VisibilityTimeoutSeconds: 60}))
		return err
	})},
	// The lease calls carry a live lease's task token: the key is asked
	// for all the same, so a leaked token alone does nothing. The allowed
	// caller's heartbeat only renews it; the others are refused at the door.
	spoolv1connect.JobServiceUpdateJobVisibilityProcedure: {forWork, rpc(func(ctx context.Context, j spoolv1connect.JobServiceClient, _ spoolv1connect.KeyServiceClient, f *fixture) error {
		_, err := j.UpdateJobVisibility(ctx, connect.NewRequest(&spoolv1.UpdateJobVisibilityRequest{TaskToken: f.token, VisibilityTimeoutSeconds: 60}))
		return err
	})},
	spoolv1connect.JobServicePublishEventsProcedure: {forWork, rpc(func(ctx context.Context, j spoolv1connect.JobServiceClient, _ spoolv1connect.KeyServiceClient, f *fixture) error {
		_, err := j.PublishEvents(ctx, connect.NewRequest(&spoolv1.PublishEventsRequest{TaskToken: f.token}))
		return err
	})},
	spoolv1connect.JobServiceCompleteJobProcedure: {forWork, rpc(func(ctx context.Context, j spoolv1connect.JobServiceClient, _ spoolv1connect.KeyServiceClient, f *fixture) error {
		_, err := j.CompleteJob(ctx, connect.NewRequest(&spoolv1.CompleteJobRequest{TaskToken: "st1.not-a-token"}))
		return err
	})},
	spoolv1connect.JobServiceCompleteJobsProcedure: {forWork, rpc(func(ctx context.Context, j spoolv1connect.JobServiceClient, _ spoolv1connect.KeyServiceClient, f *fixture) error {
		_, err := j.CompleteJobs(ctx, connect.NewRequest(&spoolv1.CompleteJobsRequest{Completions: []*spoolv1.CompleteJobRequest{{TaskToken: "st1.not-a-token"}}}))
		return err
	})},
	spoolv1connect.JobServiceReleaseJobProcedure: {forWork, rpc(func(ctx context.Context, j spoolv1connect.JobServiceClient, _ spoolv1connect.KeyServiceClient, f *fixture) error {
		_, err := j.ReleaseJob(ctx, connect.NewRequest(&spoolv1.ReleaseJobRequest{TaskToken: "st1.not-a-token"}))
		return err
	})},
	spoolv1connect.JobServiceReportUndeliveredProcedure: {forWork, rpc(func(ctx context.Context, j spoolv1connect.JobServiceClient, _ spoolv1connect.KeyServiceClient, f *fixture) error {
		_, err := j.ReportUndelivered(ctx, connect.NewRequest(&spoolv1.ReportUndeliveredRequest{TaskToken: "st1.not-a-token", Lines: 1}))
		return err
	})},
	spoolv1connect.JobServiceGetJobInputProcedure: {forWork, rpc(func(ctx context.Context, j spoolv1connect.JobServiceClient, _ spoolv1connect.KeyServiceClient, f *fixture) error {
		_, err := j.GetJobInput(ctx, connect.NewRequest(&spoolv1.GetJobInputRequest{TaskToken: "st1.not-a-token"}))
		return err
	})},
	spoolv1connect.ScatterServiceCreateScatterProcedure: {forSubmit, scatterRPC(func(ctx context.Context, s spoolv1connect.ScatterServiceClient, f *fixture) error {
		_, err := s.CreateScatter(ctx, connect.NewRequest(&spoolv1.CreateScatterRequest{
			Spec: &spoolv1.ScatterSpec{Queue: "q", Params: &spoolv1.JobParams{Argv: []string{"true"}}}, Batches: []string{"[1]"}}))
		return err
	})},
	spoolv1connect.ScatterServiceGetScatterProcedure: {forRead, scatterRPC(func(ctx context.Context, s spoolv1connect.ScatterServiceClient, f *fixture) error {
		_, err := s.GetScatter(ctx, connect.NewRequest(&spoolv1.GetScatterRequest{ScatterId: f.scatterID}))
		return err
	})},
	// A worker key of other queues sees a listing without the scatters of
	// queues it may not use, not a refusal.
	spoolv1connect.ScatterServiceListScattersProcedure: {forRead, scatterRPC(func(ctx context.Context, s spoolv1connect.ScatterServiceClient, f *fixture) error {
		resp, err := s.ListScatters(ctx, connect.NewRequest(&spoolv1.ListScattersRequest{}))
		if err == nil && len(resp.Msg.GetScatters()) == 0 {
			return connect.NewError(connect.CodeNotFound, nil)
		}
		return err
	})},
	spoolv1connect.ScatterServiceListScatterBatchesProcedure: {forRead, scatterRPC(func(ctx context.Context, s spoolv1connect.ScatterServiceClient, f *fixture) error {
		_, err := s.ListScatterBatches(ctx, connect.NewRequest(&spoolv1.ListScatterBatchesRequest{ScatterId: f.scatterID}))
		return err
	})},
	spoolv1connect.ScatterServiceCancelScatterProcedure: {forSubmit, scatterRPC(func(ctx context.Context, s spoolv1connect.ScatterServiceClient, f *fixture) error {
		_, err := s.CancelScatter(ctx, connect.NewRequest(&spoolv1.CancelScatterRequest{ScatterId: f.scatterCancelID}))
		return err
	})},
	// The scatter is running, so the redrive is refused (409): past the
	// door.
	spoolv1connect.ScatterServiceRedriveScatterProcedure: {forSubmit, scatterRPC(func(ctx context.Context, s spoolv1connect.ScatterServiceClient, f *fixture) error {
		_, err := s.RedriveScatter(ctx, connect.NewRequest(&spoolv1.RedriveScatterRequest{ScatterId: f.scatterID}))
		return err
	})},
	spoolv1connect.KeyServiceCreateKeyProcedure: {forAdmin, rpc(func(ctx context.Context, _ spoolv1connect.JobServiceClient, k spoolv1connect.KeyServiceClient, f *fixture) error {
		_, err := k.CreateKey(ctx, connect.NewRequest(&spoolv1.CreateKeyRequest{Name: "made-by-the-table", Role: spoolv1.KeyRole_KEY_ROLE_READ}))
		return err
	})},
	spoolv1connect.KeyServiceListKeysProcedure: {forAdmin, rpc(func(ctx context.Context, _ spoolv1connect.JobServiceClient, k spoolv1connect.KeyServiceClient, f *fixture) error {
		_, err := k.ListKeys(ctx, connect.NewRequest(&spoolv1.ListKeysRequest{}))
		return err
	})},
	// Ending a source that has no open job is not found: past the door.
	spoolv1connect.IngestServiceCompleteSourceProcedure: {forIngest, ingestRPC(func(ctx context.Context, s spoolv1connect.IngestServiceClient, f *fixture) error {
		_, err := s.CompleteSource(ctx, connect.NewRequest(&spoolv1.CompleteSourceRequest{Source: "nothing-open"}))
		return err
	})},
	spoolv1connect.IngestServiceRebuildLogProcedure: {forAdmin, ingestRPC(func(ctx context.Context, s spoolv1connect.IngestServiceClient, f *fixture) error {
		_, err := s.RebuildLog(ctx, connect.NewRequest(&spoolv1.RebuildLogRequest{JobId: f.jobID}))
		return err
	})},
	spoolv1connect.KeyServiceRevokeKeyProcedure: {forAdmin, rpc(func(ctx context.Context, _ spoolv1connect.JobServiceClient, k spoolv1connect.KeyServiceClient, f *fixture) error {
		_, err := k.RevokeKey(ctx, connect.NewRequest(&spoolv1.RevokeKeyRequest{Name: "no-such-key"}))
		return err
	})},
}

// routes lists every HTTP route besides the RPCs, by pattern.
var routes = map[string]entry{
	"GET /api/v1/jobs":                      {forList, get("/api/v1/jobs")},
	"GET /api/v1/jobs/{job_id}":             {forRead, get("/api/v1/jobs/{job}")},
	"POST /api/v1/jobs/{job_id}/cancel":     {forSubmit, send(http.MethodPost, "/api/v1/jobs/{cancel}/cancel")},
	"POST /api/v1/jobs/{job_id}/rerun":      {forSubmit, send(http.MethodPost, "/api/v1/jobs/{job}/rerun")},
	"DELETE /api/v1/jobs/{job_id}":          {forAdmin, send(http.MethodDelete, "/api/v1/jobs/{job}")},
	"GET /api/v1/queues":                    {forQueues, get("/api/v1/queues")},
	"POST /api/v1/queues/{name}/pause":      {forAdmin, send(http.MethodPost, "/api/v1/queues/table-paused/pause")},
	"POST /api/v1/queues/{name}/resume":     {forAdmin, send(http.MethodPost, "/api/v1/queues/table-paused/resume")},
	"POST /api/v1/queues/{name}/configure":  {forAdmin, postJSON("/api/v1/queues/table-configured/configure", `{"max_running": 3}`)},
	"GET /api/v1/schedules":                 {forSchedules, get("/api/v1/schedules")},
	"POST /api/v1/schedules":                {forSubmit, postJSON("/api/v1/schedules", `{"name": "table-rest", "cron": "@hourly", "job": {"queue": "q", "argv": ["true"]}}`)},
	"GET /api/v1/schedules/{name}":          {forSchedules, get("/api/v1/schedules/table")},
	"DELETE /api/v1/schedules/{name}":       {forSubmit, send(http.MethodDelete, "/api/v1/schedules/no-such-schedule")},
	"POST /api/v1/schedules/{name}/pause":   {forSubmit, send(http.MethodPost, "/api/v1/schedules/table/pause")},
	"POST /api/v1/schedules/{name}/resume":  {forSubmit, send(http.MethodPost, "/api/v1/schedules/table/resume")},
	"GET /api/v1/jobs/{job_id}/logs":        {forRead, get("/api/v1/jobs/{job}/logs")},
	"GET /api/v1/jobs/{job_id}/logs/ws":     {forRead, ws},
	"GET /api/v1/jobs/{job_id}/logs/search": {forRead, get("/api/v1/jobs/{job}/logs/search?q=x")},
	"GET /api/v1/jobs/{job_id}/logs/raw":    {forRead, get("/api/v1/jobs/{job}/logs/raw")},
	// Without a task token, a worker's request is refused past the door
	// (400).
	"GET /api/v1/jobs/{job_id}/stdin":           {forWork, get("/api/v1/jobs/{job}/stdin")},
	"POST /api/v1/uploads":                      {forSubmit, postJSON("/api/v1/uploads", "a stdin")},
	"GET /api/v1/openapi.yaml":                  {public, get("/api/v1/openapi.yaml")},
	"POST /api/v1/ingest/firehose":              {forIngest, send(http.MethodPost, "/api/v1/ingest/firehose")},
	"POST /api/v1/ingest/lines":                 {forIngest, send(http.MethodPost, "/api/v1/ingest/lines")},
	"POST /api/v1/ingest/complete":              {forIngest, send(http.MethodPost, "/api/v1/ingest/complete")},
	"GET /api/v1/scatters":                      {forRead, getListed("/api/v1/scatters")},
	"POST /api/v1/scatters":                     {forSubmit, postJSON("/api/v1/scatters", `{"queue": "q", "argv": ["true"], "batches": [[1]]}`)},
	"POST /api/v1/jobs/batch":                   {forSubmit, postJSON("/api/v1/jobs/batch", `{"jobs": [{"queue": "q", "argv": ["true"]}]}`)},
	"GET /api/v1/scatters/{scatter_id}":         {forRead, get("/api/v1/scatters/{scatter}")},
	"GET /api/v1/scatters/{scatter_id}/batches": {forRead, get("/api/v1/scatters/{scatter}/batches")},
	"POST /api/v1/scatters/{scatter_id}/cancel": {forSubmit, send(http.MethodPost, "/api/v1/scatters/{scatterCancel}/cancel")},
	"GET /api/v1/session":                       {forAnyKey, get("/api/v1/session")},
	"POST /api/v1/session":                      {forAnyKey, login},
	"DELETE /api/v1/session":                    {public, send(http.MethodDelete, "/api/v1/session")},
	"POST /api/v1/session/ticket":               {forAnyKey, send(http.MethodPost, "/api/v1/session/ticket?job_id={job}")},
	"GET /metrics":                              {forMetrics, get("/metrics")},
	"GET /healthz":                              {public, get("/healthz")},
	"GET /readyz":                               {public, get("/readyz")},
	"GET /":                                     {public, get("/")},
	"GET /jobs/{job_id}":                        {public, get("/jobs/{job}")},
	"GET /scatters":                             {public, get("/scatters")},
	"GET /queues":                               {public, get("/queues")},
	"GET /scatters/{scatter_id}":                {public, get("/scatters/{scatter}")},
	"GET /assets/{file...}":                     {public, get("/assets/app.css")},
	"GET /api/v1/jobs/{job_id}/artifacts":       {forRead, get("/api/v1/jobs/{job}/artifacts")},
	// No such artifact (404) is past the door.
	"GET /api/v1/jobs/{job_id}/artifacts/{path...}": {forRead, get("/api/v1/jobs/{job}/artifacts/none.txt")},
	"PUT /api/v1/jobs/{job_id}/artifacts/{path...}": {forWork, send(http.MethodPut, "/api/v1/jobs/{job}/artifacts/table.txt")},

	// A running scatter's redrive is refused (409): past the door.
	"POST /api/v1/scatters/{scatter_id}/redrive": {forSubmit, send(http.MethodPost, "/api/v1/scatters/{scatter}/redrive")},
}

// serverRoutes are the routes the server mounts beside the REST API's.
var serverRoutes = []string{"GET /metrics", "GET /healthz", "GET /readyz", "GET /", "GET /jobs/{job_id}", "GET /scatters", "GET /scatters/{scatter_id}",
	"GET /queues", "GET /assets/{file...}"}

func TestAccessTable(t *testing.T) {
	t.Parallel()
	// Every RPC of every spool service has an entry.
	protoregistry.GlobalFiles.RangeFilesByPackage("spool.v1", func(fd protoreflect.FileDescriptor) bool {
		for i := range fd.Services().Len() {
			sd := fd.Services().Get(i)
			for j := range sd.Methods().Len() {
				p := fmt.Sprintf("/%s/%s", sd.FullName(), sd.Methods().Get(j).Name())
				if _, ok := rpcs[p]; !ok {
					t.Errorf("RPC %s has no entry in the access table", p)
				}
			}
		}
		return true
	})
	for _, r := range append(httpapi.Routes(), serverRoutes...) {
		if _, ok := routes[r]; !ok {
			t.Errorf("route %s has no entry in the access table", r)
		}
	}

	f := newFixture(t)
	keys := map[string]string{"admin": f.srv.AdminKey}
	for _, role := range []spool.Role{spool.RoleSubmit, spool.RoleRead, spool.RoleWorker, spool.RoleIngest} {
		keys[role.String()] = f.srv.Key(t, role)
	}
	keys["worker-other"] = f.srv.Key(t, spool.RoleWorker, "other")
	revoked := f.srv.Key(t, spool.RoleAdmin)
	if _, err := f.srv.Client().RevokeKey(context.Background(), lastKeyName(t, f.srv)); err != nil {
		t.Fatal(err)
	}

	all := map[string]entry{}
	for p, e := range rpcs {
		all["RPC "+p] = e
	}
	for p, e := range routes {
		all[p] = e
	}
	for name, e := range all {
		t.Run(name, func(t *testing.T) {
			check := func(who string, c caller, ok func(int) bool, want string) {
				t.Helper()
				if got := e.call(t, f, c); !ok(got) {
					t.Errorf("%s: got %d, want %s", who, got, want)
				}
			}
			is := func(code int) func(int) bool { return func(got int) bool { return got == code } }
			passes := func(got int) bool { return got != 401 && got != 403 }
			check("a foreign Host", caller{key: f.srv.AdminKey, host: "attacker.example"}, is(403), "403")
			if e.need == public {
				check("no key", caller{}, passes, "to pass")
				return
			}
			check("no key", caller{}, is(401), "401")
			check("a revoked key", caller{key: revoked}, is(401), "401")
			if e.need.denied != "" {
				check("a "+e.need.denied+" key", caller{key: keys[e.need.denied]}, is(e.need.deniedAs), fmt.Sprint(e.need.deniedAs))
			}
			check("a "+e.need.allowed+" key", caller{key: keys[e.need.allowed]}, passes, "to pass")
		})
	}
}

// The configured public name is answered; look-alikes are not.
func TestHostAllowList(t *testing.T) {
	t.Parallel()
	f := newFixture(t, func(c *server.Config) { c.Server.PublicHosts = []string{"spool.example.com"} })
	get := routes["GET /api/v1/jobs"].call
	for host, want := range map[string]int{
		"spool.example.com": 200, "SPOOL.example.com.": 200, "localhost": 200, "app.localhost": 200, "127.0.0.1": 200, "[::1]:7070": 200,
		"spool.example.com.attacker.example": 403, "attacker.example": 403, "example.com": 403,
	} {
		if got := get(t, f, caller{key: f.srv.AdminKey, host: host}); got != want {
			t.Errorf("Host %s: %d, want %d", host, got, want)
		}
	}
}

func newFixture(t *testing.T, tweaks ...func(*server.Config)) *fixture {
	t.Helper()
	f := &fixture{srv: start(t, tweaks...)}
	c := f.srv.Client()
	ctx := context.Background()
	if _, _, err := c.Submit(ctx, client.SubmitParams{Queue: "q", Argv: []string{"true"}}); err != nil {
		t.Fatal(err)
	}
	f.token = spooltest.LeaseJob(t, f.srv, "q").TaskToken()
	queued, _, err := c.Submit(ctx, client.SubmitParams{Queue: "q", Argv: []string{"true"}})
	if err != nil {
		t.Fatal(err)
	}
	cancel, _, err := c.Submit(ctx, client.SubmitParams{Queue: "q", Argv: []string{"true"}})
	if err != nil {
		t.Fatal(err)
	}
	f.jobID, f.cancelID = queued.ID, cancel.ID
	// The queue the pause and resume entries name must be one.
	if _, _, err := c.Submit(ctx, client.SubmitParams{Queue: "table-paused", Argv: []string{"true"}}); err != nil {
		t.Fatal(err)
	}
	for _, id := range []*string{&f.scatterID, &f.scatterCancelID} {
		sc, err := c.StartScatter(ctx, client.ScatterParams{Job: client.SubmitParams{Queue: "q", Argv: []string{"true"}},
			Batches: []json.RawMessage{json.RawMessage(`[1]`)}})
		if err != nil {
			t.Fatal(err)
		}
		*id = sc.ID
	}
	return f
}

// lastKeyName is the name of the key created last.
func lastKeyName(t *testing.T, srv *spooltest.Server) string {
	t.Helper()
	keys, err := srv.Client().Keys(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	slices.SortFunc(keys, func(a, b *spool.Key) int { return a.CreatedAt.Compare(b.CreatedAt) })
	return keys[len(keys)-1].Name
}

// as is an HTTP client that sends c's key and Host.
func as(c caller) *http.Client {
	return &http.Client{Transport: roundTrip(func(r *http.Request) (*http.Response, error) {
		r = r.Clone(r.Context())
		if c.key != "" {
			r.Header.Set("Authorization", "Bearer "+c.key)
		}
		if c.host != "" {
			r.Host = c.host
		}
		return http.DefaultTransport.RoundTrip(r)
	})}
}

type roundTrip func(*http.Request) (*http.Response, error)

func (f roundTrip) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// rpc makes an entry's call through the Connect clients.
func rpc(call func(context.Context, spoolv1connect.JobServiceClient, spoolv1connect.KeyServiceClient, *fixture) error) func(*testing.T, *fixture, caller) int {
	return func(t *testing.T, f *fixture, c caller) int {
		hc := as(c)
		ctx := context.WithValue(context.Background(), callerKey{}, c)
		err := call(ctx, spoolv1connect.NewJobServiceClient(hc, f.srv.URL), spoolv1connect.NewKeyServiceClient(hc, f.srv.URL), f)
		switch connect.CodeOf(err) {
		case connect.CodeUnauthenticated:
			return 401
		case connect.CodePermissionDenied:
			return 403
		case connect.CodeNotFound:
			return 404
		}
		return 200
	}
}

// callerKey carries an RPC entry's caller to the clients it makes.
type callerKey struct{}

func callerOf(ctx context.Context) caller { return ctx.Value(callerKey{}).(caller) }

// scatterRPC makes an entry's call through the ScatterService client.
func scatterRPC(call func(context.Context, spoolv1connect.ScatterServiceClient, *fixture) error) func(*testing.T, *fixture, caller) int {
	return rpc(func(ctx context.Context, _ spoolv1connect.JobServiceClient, _ spoolv1connect.KeyServiceClient, f *fixture) error {
		return call(ctx, spoolv1connect.NewScatterServiceClient(as(callerOf(ctx)), f.srv.URL), f)
	})
}

// ingestRPC makes an entry's call through the IngestService client.
func ingestRPC(call func(context.Context, spoolv1connect.IngestServiceClient, *fixture) error) func(*testing.T, *fixture, caller) int {
	return rpc(func(ctx context.Context, _ spoolv1connect.JobServiceClient, _ spoolv1connect.KeyServiceClient, f *fixture) error {
		return call(ctx, spoolv1connect.NewIngestServiceClient(as(callerOf(ctx)), f.srv.URL), f)
	})
}

// queueRPC makes an entry's call through the QueueService client.
func queueRPC(call func(context.Context, spoolv1connect.QueueServiceClient, *fixture) error) func(*testing.T, *fixture, caller) int {
	return rpc(func(ctx context.Context, _ spoolv1connect.JobServiceClient, _ spoolv1connect.KeyServiceClient, f *fixture) error {
		return call(ctx, spoolv1connect.NewQueueServiceClient(as(callerOf(ctx)), f.srv.URL), f)
	})
}

// scheduleRPC makes an entry's call through the ScheduleService client.
func scheduleRPC(call func(context.Context, spoolv1connect.ScheduleServiceClient, *fixture) error) func(*testing.T, *fixture, caller) int {
	return rpc(func(ctx context.Context, _ spoolv1connect.JobServiceClient, _ spoolv1connect.KeyServiceClient, f *fixture) error {
		return call(ctx, spoolv1connect.NewScheduleServiceClient(as(callerOf(ctx)), f.srv.URL), f)
	})
}

// path fills a pattern's placeholders from the fixture.
func path(f *fixture, p string) string {
	return strings.NewReplacer("{job}", f.jobID, "{cancel}", f.cancelID, "{scatterCancel}", f.scatterCancelID, "{scatter}", f.scatterID).Replace(p)
}

func get(p string) func(*testing.T, *fixture, caller) int { return send(http.MethodGet, p) }

// getListed is get for a listing that leaves out what the caller may not
// see: an empty listing counts as refused (404).
func getListed(p string) func(*testing.T, *fixture, caller) int {
	return func(t *testing.T, f *fixture, c caller) int {
		resp, err := as(c).Get(f.srv.URL + p)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var page struct {
			Scatters []json.RawMessage `json:"scatters"`
		}
		if resp.StatusCode == http.StatusOK && json.NewDecoder(resp.Body).Decode(&page) == nil && len(page.Scatters) == 0 {
			return http.StatusNotFound
		}
		return resp.StatusCode
	}
}

// createScatter creates a scatter over REST.
// postJSON posts body to p, as a caller whose request is well formed.
func postJSON(p, body string) func(*testing.T, *fixture, caller) int {
	return func(t *testing.T, f *fixture, c caller) int {
		resp, err := as(c).Post(f.srv.URL+p, "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode
	}
}

func send(method, p string) func(*testing.T, *fixture, caller) int {
	return func(t *testing.T, f *fixture, c caller) int {
		req, err := http.NewRequest(method, f.srv.URL+path(f, p), nil)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := as(c).Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode
	}
}

// login sends the key in the body, as the web UI does.
func login(t *testing.T, f *fixture, c caller) int {
	body := `{"key": "` + c.key + `"}`
	req, err := http.NewRequest(http.MethodPost, f.srv.URL+"/api/v1/session", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := as(caller{host: c.host}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// ws opens the log WebSocket and returns the status of the upgrade.
func ws(t *testing.T, f *fixture, c caller) int {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	conn, resp, err := websocket.Dial(ctx, strings.Replace(f.srv.URL, "http", "ws", 1)+"/api/v1/jobs/"+f.jobID+"/logs/ws",
		&websocket.DialOptions{HTTPClient: as(c)})
	if err == nil {
		conn.CloseNow()
		return 200
	}
	if resp == nil {
		t.Fatalf("websocket: %v", err)
	}
	return resp.StatusCode
}
