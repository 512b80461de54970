package service

import (
	"context"
	"errors"
	"io"
	"sync"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"google.golang.org/protobuf/proto"

	"github.com/spool-run/spool"
	spoolv1 "github.com/spool-run/spool/gen/spool/v1"
	"github.com/spool-run/spool/internal/apierr"
	"github.com/spool-run/spool/internal/convert"
	"github.com/spool-run/spool/internal/ingest"
	"github.com/spool-run/spool/internal/store"
	"github.com/spool-run/spool/internal/store/storekit"
)

// The logs of programs spool did not start arrive here, whatever carried
// them (Firehose, a log shipper): each source is one external job, opened
// by its first events and ended by CompleteSource, a cancel or the idle
// timeout. The store keeps every event id of a source once, so a delivery
// sent again (a sender's retry, a subscription's at-least-once, a replay
// of a backup) is always safe and changes nothing.

// IngestFormat names the wire format of a delivery, for errors and
// metrics.
type IngestFormat string

const (
	FormatFirehose IngestFormat = "firehose"
	FormatLines    IngestFormat = "lines"
)

// IngestSummary is what a delivery did.
type IngestSummary struct {
	// Events is how many events the delivery held; Accepted were stored
	// now, Duplicates had been stored before (or came twice in it).
	Events, Accepted, Duplicates int
	// Sources are the delivery's sources, in the order they first appear.
	Sources []SourceSummary
}

// SourceSummary is what a delivery did for one source.
type SourceSummary struct {
	Source string
	// JobID is the job the source's events went to; empty when all of
	// them were duplicates and the source has no open job.
	JobID    string
	Accepted int
	// Opened says this delivery opened the job.
	Opened bool
}

// ingestParallelism bounds how many sources of one delivery are stored at
// once: a delivery of many sources then takes about the time of its
// slowest few, without one request taking every store connection.
const ingestParallelism = 4

// IngestFirehose stores a delivery of Amazon Data Firehose's HTTP endpoint
// destination carrying CloudWatch Logs subscription records. The caller's
// key (Firehose sends it as X-Amz-Firehose-Access-Key) must have the ingest
// permission. The decoded request is returned even with an error, for its
// request id, which the answer must echo.
func (s *Service) IngestFirehose(ctx context.Context, body io.Reader) (ingest.FirehoseRequest, IngestSummary, error) {
	caller, err := s.authorize(ctx, PermIngest, "")
	if err != nil {
		return ingest.FirehoseRequest{}, IngestSummary{}, err
	}
	d, err := ingest.ReadFirehose(body, s.ingestLimits())
	if err != nil {
		return ingest.FirehoseRequest{RequestID: d.RequestID}, IngestSummary{}, s.refuseDelivery(ctx, FormatFirehose, err)
	}
	// The records were measured without being held; what decoding them
	// holds waits for its turn among the deliveries being decoded now.
	release, err := s.holdDecoding(ctx, d.DecodedBytes())
	if err != nil {
		return ingest.FirehoseRequest{RequestID: d.RequestID}, IngestSummary{}, err
	}
	defer release()
	req, err := d.Decode()
	if err != nil {
		return req, IngestSummary{}, s.refuseDelivery(ctx, FormatFirehose, err)
	}
	sum, err := s.storeEvents(ctx, caller, FormatFirehose, req.Events)
	return req, sum, err
}

// IngestLines stores newline-delimited JSON events, as log shippers send
// them: {"source", "id", "timestamp", "message"} a line.
func (s *Service) IngestLines(ctx context.Context, body io.Reader) (IngestSummary, error) {
	caller, err := s.authorize(ctx, PermIngest, "")
	if err != nil {
		return IngestSummary{}, err
	}
	evs, err := ingest.DecodeLines(body, s.ingestLimits())
	if err != nil {
		return IngestSummary{}, s.refuseDelivery(ctx, FormatLines, err)
	}
	return s.storeEvents(ctx, caller, FormatLines, evs)
}

// IngestMaxBodyBytes is the most a delivery's body may hold as sent
// (ingest.max_body_bytes): an entrance stops reading past it.
func (s *Service) IngestMaxBodyBytes() int64 { return s.cfg.Ingest.MaxBodyBytes }

// ingestLimits are the decoders' limits from the configuration, named in
// their errors as the configuration names them.
func (s *Service) ingestLimits() ingest.Limits {
	i := s.cfg.Ingest
	return ingest.Limits{MaxBodyBytes: i.MaxBodyBytes, MaxDecodedBytes: i.MaxDecodedBytes,
		BodySetting: "ingest.max_body_bytes", DecodedSetting: "ingest.max_decoded_bytes"}
}

// refuseDelivery turns a decoder's error into the caller's: the whole
// delivery is refused and nothing of it stored. The error keeps the
// decoder's kind (ingest.ErrTooLarge, ingest.ErrMalformed) so an entrance
// can answer each as its protocol says.
func (s *Service) refuseDelivery(ctx context.Context, f IngestFormat, err error) error {
	s.metrics.ingestRequests.Add(ctx, 1, metric.WithAttributes(attribute.String("format", string(f)), attribute.String("outcome", "refused")))
	if !errors.Is(err, ingest.ErrMalformed) && !errors.Is(err, ingest.ErrTooLarge) {
		// The body could not be read whole: the sender went away, or sent
		// more than the entrance lets through.
		return apierr.Errorf(spool.ErrInvalidArgument, "the delivery was not read whole, so nothing of it was stored: %w", err)
	}
	return apierr.Errorf(spool.ErrInvalidArgument, "nothing of this delivery was stored: %w", err)
}

// storeEvents stores a decoded delivery, source by source. A failure of
// the store fails the delivery; what was stored of it before stays, and
// the sender's retry of the whole delivery stores the rest, since the
// events stored already are duplicates then.
func (s *Service) storeEvents(ctx context.Context, caller Caller, f IngestFormat, evs []ingest.Event) (IngestSummary, error) {
	sum := IngestSummary{Events: len(evs)}
	groups := map[string]int{}
	var bySource [][]store.RawEvent
	for _, e := range ingest.Dedupe(evs) {
		i, ok := groups[e.Source]
		if !ok {
			i = len(bySource)
			groups[e.Source] = i
			bySource = append(bySource, nil)
			sum.Sources = append(sum.Sources, SourceSummary{Source: e.Source})
		}
		bySource[i] = append(bySource[i], store.RawEvent{ID: e.ID, Time: e.Timestamp, Message: e.Message})
	}
	var (
		wg   sync.WaitGroup
		sem  = make(chan struct{}, ingestParallelism)
		errs = make([]error, len(bySource))
	)
	for i, raw := range bySource {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			src := &sum.Sources[i]
			res, err := s.store.Ingest(ctx, store.IngestRequest{Source: src.Source, Events: raw, Job: s.externalJob(src.Source)})
			if err != nil {
				errs[i] = err
				return
			}
			src.Accepted, src.Opened, src.JobID = res.Accepted, res.Created, res.Job.GetJobId()
		})
	}
	wg.Wait()
	attrs := func(outcome string) metric.MeasurementOption {
		return metric.WithAttributes(attribute.String("format", string(f)), attribute.String("outcome", outcome))
	}
	for _, src := range sum.Sources {
		sum.Accepted += src.Accepted
		if src.Opened {
			s.metrics.ingestSources.Add(ctx, 1)
			s.audit(ctx, caller, "external job opened", "job_id", src.JobID, "source", src.Source)
		}
	}
	sum.Duplicates = sum.Events - sum.Accepted
	s.metrics.ingestEvents.Add(ctx, int64(sum.Accepted), attrs("accepted"))
	s.metrics.ingestEvents.Add(ctx, int64(sum.Duplicates), attrs("duplicate"))
	if err := errors.Join(errs...); err != nil {
		s.metrics.ingestRequests.Add(ctx, 1, attrs("failed"))
		return sum, s.fail(ctx, "Ingest", err)
	}
	s.metrics.ingestRequests.Add(ctx, 1, attrs("stored"))
	return sum, nil
}

// externalJob is the job a source's first events open.
func (s *Service) externalJob(source string) store.NewJob {
	return store.NewJob{
		Queue:       s.cfg.Ingest.Queue,
		Params:      &spoolv1.JobParams{External: &spoolv1.External{Source: source}},
		Execution:   s.cfg.ExecutionConfig(),
		MaxAttempts: 1,
	}
}

// CompleteSource ends the open job of a source, or an external job named
// by its id. Its log is complete: followers see its end.
func (s *Service) CompleteSource(ctx context.Context, m *spoolv1.CompleteSourceRequest) (*spoolv1.CompleteSourceResponse, error) {
	caller, err := s.authorize(ctx, PermIngest, "")
	if err != nil {
		return nil, err
	}
	var job *spoolv1.Job
	switch {
	case (m.GetSource() == "") == (m.GetJobId() == ""):
		return nil, invalid("name exactly one of source (whose open job ends) and job_id (an external job)")
	case m.GetSource() != "":
		if err := checkSource(m.GetSource()); err != nil {
			return nil, err
		}
		jobs, _, err := s.store.List(ctx, store.ListFilter{Source: m.GetSource(), States: []spoolv1.JobState{spoolv1.JobState_JOB_STATE_RUNNING}, Limit: 1})
		if err != nil {
			return nil, s.fail(ctx, "CompleteSource", err)
		}
		if len(jobs) == 0 {
			return nil, apierr.Errorf(spool.ErrNotFound, "source %q has no open job: it has sent nothing since its last job ended", truncate(m.GetSource(), 200))
		}
		job = jobs[0]
	default:
		if err := checkJobID(m.GetJobId()); err != nil {
			return nil, err
		}
		if job, err = s.store.Get(ctx, m.GetJobId()); err != nil {
			return nil, s.fail(ctx, "CompleteSource", err)
		}
		if job.GetParams().GetExternal() == nil {
			return nil, invalid("job %s runs a command: it ends when its command does (cancel it with CancelJob)", job.GetJobId())
		}
	}
	job, err = s.endExternal(ctx, job, &spoolv1.JobResult{}, "")
	if err != nil {
		return nil, s.fail(ctx, "CompleteSource", err)
	}
	s.audit(ctx, caller, "external job completed", "job_id", job.GetJobId(), "source", job.GetParams().GetExternal().GetSource())
	return &spoolv1.CompleteSourceResponse{Job: job}, nil
}

// endExternal ends a running external job with res, noting first why
// when note is set; a job that had ended is returned as it is.
func (s *Service) endExternal(ctx context.Context, job *spoolv1.Job, res *spoolv1.JobResult, note string) (*spoolv1.Job, error) {
	if convert.State(job.GetState()).IsFinal() {
		return job, nil
	}
	if note != "" {
		if _, err := s.store.AddNote(ctx, job.GetJobId(), note); err != nil {
			return nil, err
		}
	}
	ended, err := s.store.Complete(ctx, store.ExternalLeaseRef(job), res)
	if errors.Is(err, spool.ErrStaleLease) {
		// Ended meanwhile (another server's idle sweep, a cancel).
		return s.store.Get(ctx, job.GetJobId())
	}
	if err != nil {
		return nil, err
	}
	s.metrics.jobFinished(ctx, ended)
	return ended, nil
}

// RebuildLog rebuilds an external job's stored log from its accepted
// events, writing only if something differs, and says what it found.
func (s *Service) RebuildLog(ctx context.Context, m *spoolv1.RebuildLogRequest) (*spoolv1.RebuildLogResponse, error) {
	caller, err := s.authorize(ctx, PermRepair, "")
	if err != nil {
		return nil, err
	}
	if err := checkJobID(m.GetJobId()); err != nil {
		return nil, err
	}
	job, err := s.store.Get(ctx, m.GetJobId())
	if err != nil {
		return nil, s.fail(ctx, "RebuildLog", err)
	}
	if job.GetParams().GetExternal() == nil {
		return nil, invalid("job %s ran a command: only an external job's log is rebuilt, from the events accepted for it", job.GetJobId())
	}
	var accepted []store.Accepted
	for a, err := range s.store.Accepted(ctx, job.GetJobId()) {
		if err != nil {
			return nil, s.fail(ctx, "RebuildLog", err)
		}
		accepted = append(accepted, a)
	}
	rebuilt, err := storekit.RebuildEvents(job.GetExecutionConfig().GetBatching(), s.store.Limits(), accepted)
	if err != nil {
		return nil, s.fail(ctx, "RebuildLog", err)
	}
	var stored []*spoolv1.JobEvent
	for ev, err := range storekit.Read(ctx, s.store, store.ReadRequest{JobID: job.GetJobId(), FromSequence: 1}) {
		if err != nil {
			return nil, s.fail(ctx, "RebuildLog", err)
		}
		stored = append(stored, ev)
	}
	changed := itemsChanged(stored, rebuilt)
	if changed > 0 {
		if err := s.store.ReplaceLog(ctx, job.GetJobId(), rebuilt); err != nil {
			return nil, s.fail(ctx, "RebuildLog", err)
		}
		s.log.WarnContext(ctx, "external job's log differed from its accepted events and was rebuilt", "job_id", job.GetJobId(), "items_changed", changed)
	}
	s.audit(ctx, caller, "log rebuilt", "job_id", job.GetJobId(), "items", len(rebuilt), "items_changed", changed)
	var lines int64
	for _, a := range accepted {
		lines += a.Lines
	}
	return &spoolv1.RebuildLogResponse{Job: job, Events: int64(len(accepted)), Lines: lines, Items: int64(len(rebuilt)), ItemsChanged: int64(changed)}, nil
}

// itemsChanged counts the items that differ between a stored log and a
// rebuilt one, by sequence: in one and not the other, or not the same.
func itemsChanged(stored, rebuilt []*spoolv1.JobEvent) int {
	bySeq := make(map[int64]*spoolv1.JobEvent, len(stored))
	for _, ev := range stored {
		bySeq[ev.GetSequence()] = ev
	}
	changed := 0
	for _, ev := range rebuilt {
		old, ok := bySeq[ev.GetSequence()]
		if !ok || !proto.Equal(old, ev) {
			changed++
		}
		delete(bySeq, ev.GetSequence())
	}
	return changed + len(bySeq)
}

// EndExternal ends a running external job, noting first why (the idle
// sweeper's reason), as CompleteSource does; a job that had ended is
// returned as it is.
func (s *Service) EndExternal(ctx context.Context, job *spoolv1.Job, note string) (*spoolv1.Job, error) {
	return s.endExternal(ctx, job, &spoolv1.JobResult{}, note)
}

// checkSource bounds a source name as the decoders do.
func checkSource(src string) error {
	return checkText("source", src, ingest.DefaultMaxSourceBytes)
}
