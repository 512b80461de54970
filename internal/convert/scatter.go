package convert

import (
	"encoding/json"

	"github.com/spool-run/spool"
	spoolv1 "github.com/spool-run/spool/gen/spool/v1"
)

// Scatter is the scatter sc (nil for nil).
func Scatter(sc *spoolv1.Scatter) *spool.Scatter {
	if sc == nil {
		return nil
	}
	p, spec := sc.GetProgress(), sc.GetSpec()
	out := &spool.Scatter{
		ID: sc.GetScatterId(), State: ScatterState(sc.GetState()), Error: sc.GetError(),
		CreatedAt: timeOf(sc.GetCreatedAt()), UpdatedAt: timeOf(sc.GetUpdatedAt()), GatherJobID: sc.GetGatherJobId(),
		FailedJobIDs: sc.GetFailedJobIds(), RedriveCount: int(sc.GetRedriveCount()),
		Progress: spool.ScatterProgress{
			BatchCount: int(p.GetBatchCount()), Waiting: int(p.GetWaiting()), Queued: int(p.GetQueued()), Running: int(p.GetRunning()),
			Succeeded: int(p.GetSucceeded()), Failed: int(p.GetFailed()), Cancelled: int(p.GetCancelled()),
			ItemCount: p.GetItemCount(), ItemsDone: p.GetItemsDone(),
		},
		Spec: spool.ScatterSpec{
			Queue: spec.GetQueue(), Params: Params(spec.GetParams()), MaxAttempts: int(spec.GetMaxAttempts()), Retries: int(spec.GetRetries()),
			MaxConcurrency: int(spec.GetMaxConcurrency()), ToleratedFailurePercentage: spec.ToleratedFailurePercentage,
		},
	}
	if spec.ToleratedFailureCount != nil {
		n := int(spec.GetToleratedFailureCount())
		out.Spec.ToleratedFailureCount = &n
	}
	if in := spec.GetBatchInput(); in != "" {
		out.Spec.BatchInput = json.RawMessage(in)
	}
	if g := spec.GetGather(); g != nil {
		gp := Params(g)
		out.Spec.Gather = &gp
	}
	if src := spec.GetSource(); src != nil {
		out.Spec.Source = &spool.ScatterSource{
			Items: src.GetItems(), ItemsPrefix: src.GetItemsPrefix(), Format: src.GetFormat(),
			MaxItemsPerBatch: int(src.GetMaxItemsPerBatch()), MaxBytesPerBatch: int(src.GetMaxBytesPerBatch()),
			GroupBy: src.GetGroupBy(), MaxItemsPerGroup: int(src.GetMaxItemsPerGroup()),
		}
	}
	out.Spec.Results, out.ResultManifest = spec.GetResults(), sc.GetResultManifest()
	if r := sc.GetReading(); r != nil {
		out.Reading = &spool.ScatterReading{Done: r.GetDone(), ItemsRead: r.GetItemsRead(), BytesRead: r.GetBytesRead(), Reader: r.GetReader(), ReaderUntil: timeOf(r.GetReaderUntil()), Etag: r.GetEtag()}
	}
	return out
}

// Scatters are the scatters scs.
func Scatters(scs []*spoolv1.Scatter) []*spool.Scatter {
	out := make([]*spool.Scatter, len(scs))
	for i, sc := range scs {
		out[i] = Scatter(sc)
	}
	return out
}

// ScatterProto is the wire's scatter sc (nil for nil).
func ScatterProto(sc *spool.Scatter) *spoolv1.Scatter {
	if sc == nil {
		return nil
	}
	p := sc.Progress
	out := &spoolv1.Scatter{
		ScatterId: sc.ID, State: ScatterStateProto(sc.State), Error: sc.Error,
		CreatedAt: stamp(sc.CreatedAt), UpdatedAt: stamp(sc.UpdatedAt), GatherJobId: sc.GatherJobID,
		FailedJobIds: sc.FailedJobIDs, RedriveCount: int32(sc.RedriveCount),
		Progress: &spoolv1.ScatterProgress{
			BatchCount: int32(p.BatchCount), Waiting: int32(p.Waiting), Queued: int32(p.Queued), Running: int32(p.Running),
			Succeeded: int32(p.Succeeded), Failed: int32(p.Failed), Cancelled: int32(p.Cancelled),
			ItemCount: p.ItemCount, ItemsDone: p.ItemsDone,
		},
		Spec:           SpecProto(sc.Spec),
		ResultManifest: sc.ResultManifest,
	}
	if r := sc.Reading; r != nil {
		out.Reading = &spoolv1.ScatterReading{Done: r.Done, ItemsRead: r.ItemsRead, BytesRead: r.BytesRead, Reader: r.Reader, ReaderUntil: stamp(r.ReaderUntil), Etag: r.Etag}
	}
	return out
}

// SpecProto is the wire's ScatterSpec of spec.
func SpecProto(spec spool.ScatterSpec) *spoolv1.ScatterSpec {
	out := &spoolv1.ScatterSpec{
		Queue: spec.Queue, Params: ParamsProto(spec.Params), MaxAttempts: int32(spec.MaxAttempts), Retries: int32(spec.Retries),
		BatchInput: string(spec.BatchInput), MaxConcurrency: int32(spec.MaxConcurrency),
		ToleratedFailurePercentage: spec.ToleratedFailurePercentage,
	}
	if spec.ToleratedFailureCount != nil {
		n := int32(*spec.ToleratedFailureCount)
		out.ToleratedFailureCount = &n
	}
	if spec.Gather != nil {
		out.Gather = ParamsProto(*spec.Gather)
	}
	if src := spec.Source; src != nil {
		out.Source = &spoolv1.ScatterSource{
			Items: src.Items, ItemsPrefix: src.ItemsPrefix, Format: src.Format,
			MaxItemsPerBatch: int32(src.MaxItemsPerBatch), MaxBytesPerBatch: int32(src.MaxBytesPerBatch),
			GroupBy: src.GroupBy, MaxItemsPerGroup: int32(src.MaxItemsPerGroup),
		}
	}
	out.Results = spec.Results
	return out
}

// ScatterBatches are the batches bs.
func ScatterBatches(bs []*spoolv1.ScatterBatch) []*spool.ScatterBatch {
	out := make([]*spool.ScatterBatch, len(bs))
	for i, b := range bs {
		out[i] = &spool.ScatterBatch{Index: int(b.GetBatchIndex()), ItemCount: int(b.GetItemCount()), Job: Job(b.GetJob())}
	}
	return out
}

// ScatterBatchesProto are the wire's batches bs.
func ScatterBatchesProto(bs []*spool.ScatterBatch) []*spoolv1.ScatterBatch {
	out := make([]*spoolv1.ScatterBatch, len(bs))
	for i, b := range bs {
		out[i] = &spoolv1.ScatterBatch{BatchIndex: int32(b.Index), ItemCount: int32(b.ItemCount), Job: JobProto(b.Job)}
	}
	return out
}
