// Package connectapi serves the service core as spool's JobService over
// Connect, so one handler speaks gRPC, gRPC-Web and Connect JSON. Each
// method unwraps the request, calls the core and wraps its answer; errors
// become Connect codes through apierr. No rule lives here.
package connectapi

import (
	"context"
	"log/slog"
	"net/http"
	"time"

	"connectrpc.com/connect"
	"connectrpc.com/grpcreflect"
	"google.golang.org/protobuf/encoding/protowire"

	spoolv1 "github.com/spool-run/spool/gen/spool/v1"
	"github.com/spool-run/spool/gen/spool/v1/spoolv1connect"
	"github.com/spool-run/spool/internal/apierr"
	"github.com/spool-run/spool/internal/events"
	"github.com/spool-run/spool/internal/service"
	"github.com/spool-run/spool/internal/wire"
)

// Options configure the handlers.
type Options struct {
	// Log receives a debug line per call (nil: discarded).
	Log *slog.Logger
	// Interceptors run around every call (metrics, for one).
	Interceptors []connect.Interceptor
}

// Register mounts the JobService, the KeyService, the ScatterService, the
// IngestService, the QueueService and gRPC reflection on mux, and returns
// the patterns it mounted them under, for the server's door to know them
// (whose refusals these handlers' clients read as Connect errors: Refuse).
//
// Each call is served with the request size limit the core sets for it
// (service.MaxPublishRequestBytes and the like). Connect takes limits per
// handler, so the service is built once per limit and each procedure's
// path is mounted on the build with its limit.
func Register(mux *http.ServeMux, svc *service.Service, o Options) (patterns []string) {
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	handle := func(pattern string, h http.Handler) {
		mux.Handle(pattern, h)
		patterns = append(patterns, pattern)
	}
	h := handler{svc}
	interceptors := connect.WithInterceptors(append(o.Interceptors, logCalls(o.Log))...)
	options := func(limit int) []connect.HandlerOption {
		return []connect.HandlerOption{connect.WithReadMaxBytes(limit), wire.HandlerCompression(limit),
			connect.WithCompressMinBytes(compressResponsesFrom), jsonCodecs(), interceptors}
	}
	build := func(limit int) (string, http.Handler) {
		path, hh := spoolv1connect.NewJobServiceHandler(h, options(limit)...)
		return path, capBody(hh, limit)
	}
	handle(build(service.MaxRequestBytes)) // every call but those below
	keysPath, keys := spoolv1connect.NewKeyServiceHandler(keyHandler{svc}, options(service.MaxRequestBytes)...)
	handle(keysPath, capBody(keys, service.MaxRequestBytes))
	ingestPath, ingest := spoolv1connect.NewIngestServiceHandler(ingestHandler{svc}, options(service.MaxRequestBytes)...)
	handle(ingestPath, capBody(ingest, service.MaxRequestBytes))
	queuesPath, queues := spoolv1connect.NewQueueServiceHandler(queueHandler{svc}, options(service.MaxRequestBytes)...)
	handle(queuesPath, capBody(queues, service.MaxRequestBytes))
	buildScatters := func(limit int) (string, http.Handler) {
		path, hh := spoolv1connect.NewScatterServiceHandler(scatterHandler{svc}, options(limit)...)
		return path, capBody(hh, limit)
	}
	handle(buildScatters(service.MaxRequestBytes))
	// A schedule carries the job it enqueues, as large as an enqueue's.
	schedulesPath, schedules := spoolv1connect.NewScheduleServiceHandler(scheduleHandler{svc}, options(service.MaxEnqueueRequestBytes)...)
	handle(schedulesPath, capBody(schedules, service.MaxEnqueueRequestBytes))
	for proc, limit := range map[string]int{
		spoolv1connect.JobServicePublishEventsProcedure: service.MaxPublishRequestBytes,
		spoolv1connect.JobServiceEnqueueJobProcedure:    service.MaxEnqueueRequestBytes,
		spoolv1connect.JobServiceEnqueueJobsProcedure:   service.MaxEnqueueJobsRequestBytes,
		spoolv1connect.JobServiceCompleteJobProcedure:   service.MaxCompleteRequestBytes,
		spoolv1connect.JobServiceCompleteJobsProcedure:  service.MaxCompleteRequestBytes,
	} {
		_, hh := build(limit)
		handle(proc, hh)
	}
	_, creates := buildScatters(service.MaxScatterRequestBytes)
	handle(spoolv1connect.ScatterServiceCreateScatterProcedure, creates)
	reflector := grpcreflect.NewStaticReflector(spoolv1connect.JobServiceName, spoolv1connect.KeyServiceName, spoolv1connect.ScatterServiceName,
		spoolv1connect.IngestServiceName, spoolv1connect.QueueServiceName, spoolv1connect.ScheduleServiceName)
	handle(grpcreflect.NewHandlerV1(reflector))
	handle(grpcreflect.NewHandlerV1Alpha(reflector))
	return patterns
}

// compressResponsesFrom is the size from which responses go compressed to
// a client that accepts it: listings and replays of many events. The
// frequent answers to workers (leases and completions of up to about a
// hundred jobs, some 500 bytes a job) are not worth it: compressing them
// took a tenth of the server's CPU on a busy queue, for bytes that cross
// a data centre's network in well under a millisecond.
const compressResponsesFrom = 64 << 10

// handler adapts the core to the generated JobServiceHandler.
type handler struct{ svc *service.Service }

var _ spoolv1connect.JobServiceHandler = handler{}

// unary calls a core method with the request's message.
func unary[Req, Res any](ctx context.Context, req *connect.Request[Req], call func(context.Context, *Req) (*Res, error)) (*connect.Response[Res], error) {
	res, err := call(ctx, req.Msg)
	if err != nil {
		return nil, apierr.Connect(err)
	}
	return connect.NewResponse(res), nil
}

func (h handler) EnqueueJob(ctx context.Context, req *connect.Request[spoolv1.EnqueueJobRequest]) (*connect.Response[spoolv1.EnqueueJobResponse], error) {
	return unary(ctx, req, h.svc.EnqueueJob)
}

func (h handler) EnqueueJobs(ctx context.Context, req *connect.Request[spoolv1.EnqueueJobsRequest]) (*connect.Response[spoolv1.EnqueueJobsResponse], error) {
	return unary(ctx, req, h.svc.EnqueueJobs)
}

func (h handler) GetJob(ctx context.Context, req *connect.Request[spoolv1.GetJobRequest]) (*connect.Response[spoolv1.GetJobResponse], error) {
	return unary(ctx, req, h.svc.GetJob)
}

func (h handler) ListJobs(ctx context.Context, req *connect.Request[spoolv1.ListJobsRequest]) (*connect.Response[spoolv1.ListJobsResponse], error) {
	return unary(ctx, req, h.svc.ListJobs)
}

func (h handler) CancelJob(ctx context.Context, req *connect.Request[spoolv1.CancelJobRequest]) (*connect.Response[spoolv1.CancelJobResponse], error) {
	return unary(ctx, req, h.svc.CancelJob)
}

func (h handler) RerunJob(ctx context.Context, req *connect.Request[spoolv1.RerunJobRequest]) (*connect.Response[spoolv1.RerunJobResponse], error) {
	return unary(ctx, req, h.svc.RerunJob)
}

func (h handler) DeleteJob(ctx context.Context, req *connect.Request[spoolv1.DeleteJobRequest]) (*connect.Response[spoolv1.DeleteJobResponse], error) {
	return unary(ctx, req, h.svc.DeleteJob)
}

func (h handler) DequeueJobs(ctx context.Context, req *connect.Request[spoolv1.DequeueJobsRequest]) (*connect.Response[spoolv1.DequeueJobsResponse], error) {
	return unary(ctx, req, h.svc.DequeueJobs)
}

func (h handler) UpdateJobVisibility(ctx context.Context, req *connect.Request[spoolv1.UpdateJobVisibilityRequest]) (*connect.Response[spoolv1.UpdateJobVisibilityResponse], error) {
	return unary(ctx, req, h.svc.Heartbeat)
}

func (h handler) CompleteJob(ctx context.Context, req *connect.Request[spoolv1.CompleteJobRequest]) (*connect.Response[spoolv1.CompleteJobResponse], error) {
	return unary(ctx, req, h.svc.CompleteJob)
}

func (h handler) CompleteJobs(ctx context.Context, req *connect.Request[spoolv1.CompleteJobsRequest]) (*connect.Response[spoolv1.CompleteJobsResponse], error) {
	return unary(ctx, req, h.svc.CompleteJobs)
}

func (h handler) PublishEvents(ctx context.Context, req *connect.Request[spoolv1.PublishEventsRequest]) (*connect.Response[spoolv1.PublishEventsResponse], error) {
	return unary(ctx, req, h.svc.PublishEvents)
}

// StreamEvents sends a feed as it is read. The stream's flow control is the
// backpressure: a slow client slows its own feed, which reads the store at
// its own pace and drops nothing.
func (h handler) StreamEvents(ctx context.Context, req *connect.Request[spoolv1.StreamEventsRequest], stream *connect.ServerStream[spoolv1.StreamEventsResponse]) error {
	feed, err := h.svc.OpenFeed(ctx, req.Msg)
	if err != nil {
		return apierr.Connect(err)
	}
	defer feed.Close()
	// Send the headers now: clients wait for them before reading, and a
	// follower of a quiet job may wait long for its first event.
	if err := stream.Send(nil); err != nil {
		return err
	}
	stored := req.Msg.GetAcceptStoredEvents()
	for page, err := range feed.Pages(ctx) {
		var msgs []*spoolv1.StreamEventsResponse
		if err == nil {
			msgs, err = pageResponses(page, stored)
		}
		if err != nil {
			return apierr.Connect(err)
		}
		for _, res := range msgs {
			if err := stream.Send(res); err != nil {
				return err
			}
		}
	}
	switch {
	case feed.Finished() != nil:
		return stream.Send(&spoolv1.StreamEventsResponse{FinishedJob: feed.Finished()})
	case feed.UntilReached() && req.Msg.GetFollow():
		// A follower is told why its stream ends before the job does, so
		// it does not take the end for a lost connection.
		return stream.Send(&spoolv1.StreamEventsResponse{UntilReached: true})
	}
	return nil
}

// responseEvent is the number of StreamEventsResponse's event field.
var responseEvent = (&spoolv1.StreamEventsResponse{}).ProtoReflect().Descriptor().Fields().ByName("event").Number()

// maxStoredPerMessage bounds the stored events one message carries.
const maxStoredPerMessage = 1 << 20

// pageResponses are the messages that send a page of a feed. To a client
// that decodes stored events (stored), events read whole go as their
// payloads, untouched (the server neither decompresses nor decodes them),
// as many in a message as fit maxStoredPerMessage: one message and one
// write for what took a message and a write each. Others go one a
// message, as eventResponse makes them.
func pageResponses(page []*events.Stored, stored bool) ([]*spoolv1.StreamEventsResponse, error) {
	var (
		out  []*spoolv1.StreamEventsResponse
		pack *spoolv1.StreamEventsResponse // the message stored events are added to
		size int
	)
	for _, st := range page {
		if p := st.Payload(); stored && p != nil {
			if pack == nil || size+len(p) > maxStoredPerMessage {
				pack, size = &spoolv1.StreamEventsResponse{}, 0
				out = append(out, pack)
			}
			pack.StoredEvents = append(pack.StoredEvents, p)
			size += len(p)
			continue
		}
		res, err := eventResponse(st)
		if err != nil {
			return nil, err
		}
		out, pack = append(out, res), nil
	}
	return out, nil
}

// eventResponse is the StreamEventsResponse carrying a stored event.
//
// An event the reader gets as it was stored goes as its JobEvent protobuf,
// without being decoded: written as the response's event field (its tag,
// their length, them) those bytes are what encoding the decoded event
// would write. The response holds them as an unknown field, which protobuf
// encoding copies as it is; the JSON codec decodes them first (see
// jsonCodec.Marshal).
func eventResponse(st *events.Stored) (*spoolv1.StreamEventsResponse, error) {
	raw := st.Proto()
	if raw == nil {
		ev, err := st.Event()
		return &spoolv1.StreamEventsResponse{Event: ev}, err
	}
	field := protowire.AppendTag(make([]byte, 0, protowire.SizeTag(responseEvent)+protowire.SizeBytes(len(raw))), responseEvent, protowire.BytesType)
	res := &spoolv1.StreamEventsResponse{}
	res.ProtoReflect().SetUnknown(protowire.AppendBytes(field, raw))
	return res, nil
}

// logCalls logs every unary call at debug level.
func logCalls(log *slog.Logger) connect.UnaryInterceptorFunc {
	return func(next connect.UnaryFunc) connect.UnaryFunc {
		return func(ctx context.Context, req connect.AnyRequest) (connect.AnyResponse, error) {
			start := time.Now()
			resp, err := next(ctx, req)
			code := "ok"
			if err != nil {
				code = connect.CodeOf(err).String()
			}
			log.DebugContext(ctx, "call", "procedure", req.Spec().Procedure, "code", code, "duration", time.Since(start), "peer", req.Peer().Addr)
			return resp, err
		}
	}
}

func (h handler) ReleaseJob(ctx context.Context, req *connect.Request[spoolv1.ReleaseJobRequest]) (*connect.Response[spoolv1.ReleaseJobResponse], error) {
	return unary(ctx, req, h.svc.ReleaseJob)
}

func (h handler) ReportUndelivered(ctx context.Context, req *connect.Request[spoolv1.ReportUndeliveredRequest]) (*connect.Response[spoolv1.ReportUndeliveredResponse], error) {
	return unary(ctx, req, h.svc.ReportUndelivered)
}

func (h handler) GetJobInput(ctx context.Context, req *connect.Request[spoolv1.GetJobInputRequest]) (*connect.Response[spoolv1.GetJobInputResponse], error) {
	return unary(ctx, req, h.svc.GetJobInput)
}

// keyHandler adapts the core's key management to the KeyServiceHandler.
type keyHandler struct{ svc *service.Service }

var _ spoolv1connect.KeyServiceHandler = keyHandler{}

func (h keyHandler) CreateKey(ctx context.Context, req *connect.Request[spoolv1.CreateKeyRequest]) (*connect.Response[spoolv1.CreateKeyResponse], error) {
	return unary(ctx, req, h.svc.CreateKey)
}

func (h keyHandler) ListKeys(ctx context.Context, req *connect.Request[spoolv1.ListKeysRequest]) (*connect.Response[spoolv1.ListKeysResponse], error) {
	return unary(ctx, req, h.svc.ListKeys)
}

func (h keyHandler) RevokeKey(ctx context.Context, req *connect.Request[spoolv1.RevokeKeyRequest]) (*connect.Response[spoolv1.RevokeKeyResponse], error) {
	return unary(ctx, req, h.svc.RevokeKey)
}

// scatterHandler adapts the core's scatters to the ScatterServiceHandler.
type scatterHandler struct{ svc *service.Service }

var _ spoolv1connect.ScatterServiceHandler = scatterHandler{}

func (h scatterHandler) CreateScatter(ctx context.Context, req *connect.Request[spoolv1.CreateScatterRequest]) (*connect.Response[spoolv1.CreateScatterResponse], error) {
	return unary(ctx, req, h.svc.CreateScatter)
}

func (h scatterHandler) GetScatter(ctx context.Context, req *connect.Request[spoolv1.GetScatterRequest]) (*connect.Response[spoolv1.GetScatterResponse], error) {
	return unary(ctx, req, h.svc.GetScatter)
}

func (h scatterHandler) ListScatters(ctx context.Context, req *connect.Request[spoolv1.ListScattersRequest]) (*connect.Response[spoolv1.ListScattersResponse], error) {
	return unary(ctx, req, h.svc.ListScatters)
}

func (h scatterHandler) ListScatterBatches(ctx context.Context, req *connect.Request[spoolv1.ListScatterBatchesRequest]) (*connect.Response[spoolv1.ListScatterBatchesResponse], error) {
	return unary(ctx, req, h.svc.ListScatterBatches)
}

func (h scatterHandler) RedriveScatter(ctx context.Context, req *connect.Request[spoolv1.RedriveScatterRequest]) (*connect.Response[spoolv1.RedriveScatterResponse], error) {
	return unary(ctx, req, h.svc.RedriveScatter)
}

func (h scatterHandler) CancelScatter(ctx context.Context, req *connect.Request[spoolv1.CancelScatterRequest]) (*connect.Response[spoolv1.CancelScatterResponse], error) {
	return unary(ctx, req, h.svc.CancelScatter)
}

// ingestHandler adapts the core's external jobs to the IngestServiceHandler.
// (The logs themselves arrive over HTTP in their senders' formats:
// package httpapi.)
type ingestHandler struct{ svc *service.Service }

var _ spoolv1connect.IngestServiceHandler = ingestHandler{}

func (h ingestHandler) CompleteSource(ctx context.Context, req *connect.Request[spoolv1.CompleteSourceRequest]) (*connect.Response[spoolv1.CompleteSourceResponse], error) {
	return unary(ctx, req, h.svc.CompleteSource)
}

func (h ingestHandler) RebuildLog(ctx context.Context, req *connect.Request[spoolv1.RebuildLogRequest]) (*connect.Response[spoolv1.RebuildLogResponse], error) {
	return unary(ctx, req, h.svc.RebuildLog)
}

// queueHandler adapts the core's queue operations to the QueueServiceHandler.
type queueHandler struct{ svc *service.Service }

var _ spoolv1connect.QueueServiceHandler = queueHandler{}

func (h queueHandler) ListQueues(ctx context.Context, req *connect.Request[spoolv1.ListQueuesRequest]) (*connect.Response[spoolv1.ListQueuesResponse], error) {
	return unary(ctx, req, h.svc.ListQueues)
}

func (h queueHandler) PauseQueue(ctx context.Context, req *connect.Request[spoolv1.PauseQueueRequest]) (*connect.Response[spoolv1.PauseQueueResponse], error) {
	return unary(ctx, req, h.svc.PauseQueue)
}

func (h queueHandler) ResumeQueue(ctx context.Context, req *connect.Request[spoolv1.ResumeQueueRequest]) (*connect.Response[spoolv1.ResumeQueueResponse], error) {
	return unary(ctx, req, h.svc.ResumeQueue)
}

func (h queueHandler) ConfigureQueue(ctx context.Context, req *connect.Request[spoolv1.ConfigureQueueRequest]) (*connect.Response[spoolv1.ConfigureQueueResponse], error) {
	return unary(ctx, req, h.svc.ConfigureQueue)
}

// scheduleHandler adapts the core's schedules to the
// ScheduleServiceHandler.
type scheduleHandler struct{ svc *service.Service }

var _ spoolv1connect.ScheduleServiceHandler = scheduleHandler{}

func (h scheduleHandler) CreateSchedule(ctx context.Context, req *connect.Request[spoolv1.CreateScheduleRequest]) (*connect.Response[spoolv1.CreateScheduleResponse], error) {
	return unary(ctx, req, h.svc.CreateSchedule)
}

func (h scheduleHandler) GetSchedule(ctx context.Context, req *connect.Request[spoolv1.GetScheduleRequest]) (*connect.Response[spoolv1.GetScheduleResponse], error) {
	return unary(ctx, req, h.svc.GetSchedule)
}

func (h scheduleHandler) ListSchedules(ctx context.Context, req *connect.Request[spoolv1.ListSchedulesRequest]) (*connect.Response[spoolv1.ListSchedulesResponse], error) {
	return unary(ctx, req, h.svc.ListSchedules)
}

func (h scheduleHandler) PauseSchedule(ctx context.Context, req *connect.Request[spoolv1.PauseScheduleRequest]) (*connect.Response[spoolv1.PauseScheduleResponse], error) {
	return unary(ctx, req, h.svc.PauseSchedule)
}

func (h scheduleHandler) ResumeSchedule(ctx context.Context, req *connect.Request[spoolv1.ResumeScheduleRequest]) (*connect.Response[spoolv1.ResumeScheduleResponse], error) {
	return unary(ctx, req, h.svc.ResumeSchedule)
}

func (h scheduleHandler) DeleteSchedule(ctx context.Context, req *connect.Request[spoolv1.DeleteScheduleRequest]) (*connect.Response[spoolv1.DeleteScheduleResponse], error) {
	return unary(ctx, req, h.svc.DeleteSchedule)
}
