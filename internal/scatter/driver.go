package scatter

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"

	"github.com/google/uuid"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/spool-run/spool"
	spoolv1 "github.com/spool-run/spool/gen/spool/v1"
	"github.com/spool-run/spool/internal/blob"
	"github.com/spool-run/spool/internal/convert"
	"github.com/spool-run/spool/internal/s3items"
	"github.com/spool-run/spool/internal/store"
	"github.com/spool-run/spool/internal/store/storekit"
)

// A scatter moves on in rounds. A round reads the scatter's record, looks
// at the jobs of its batches in flight, and writes what changed in one
// compare-and-set: batches that ended, batches handed to the queue, the
// state. Only then does it act on the jobs (enqueue, cancel). Every server
// runs rounds, woken by its own batch jobs' ends and by a timer for the
// others', and two rounds of one scatter never both win: the loser reads
// again. Acting after the write means a round that lost never enqueued a
// batch the winner did not count, and a server killed between the write
// and the act leaves batches counted as released whose jobs do not exist
// yet: the next round, on any server, finds them missing and enqueues them
// under their fixed ids, so no batch runs twice and none is lost.

// roundTries bounds the rounds one wake-up runs for a scatter that other
// servers keep moving on.
const roundTries = 5

// Store is what the driver reads and writes: scatters, their batches and
// their jobs.
type Store interface {
	Jobs
	Enqueue(ctx context.Context, nj store.NewJob) (*spoolv1.Job, bool, error)
	Cancel(ctx context.Context, jobID, reason string) (*spoolv1.Job, error)
	GetScatter(ctx context.Context, id string) (*store.ScatterRecord, error)
	UpdateScatter(ctx context.Context, rec *store.ScatterRecord) error
	ScatterBatch(ctx context.Context, id string, index int32) ([]byte, error)
}

// Metrics are the counters the driver adds to; the core makes them, as it
// counts the same figures for the jobs it enqueues and leases itself.
type Metrics struct {
	// Enqueued counts jobs created, by queue.
	Enqueued metric.Int64Counter
	// BatchesCreated, BatchesCompleted and BatchesFailed count batch jobs
	// created, succeeded, and failed or cancelled, by queue.
	BatchesCreated, BatchesCompleted, BatchesFailed metric.Int64Counter
}

// DriverOptions are what a Driver is built from.
type DriverOptions struct {
	Store Store
	// Execution is the execution config of a job the driver creates with
	// params (the server's, with the batching the params ask for).
	Execution func(params *spoolv1.JobParams) *spoolv1.ExecutionConfig
	Log       *slog.Logger
	Metrics   Metrics
	// Blobs keeps the batches of scatters read from a source, and S3
	// reads the sources; without either, no source is read.
	Blobs blob.Store
	S3    *s3items.Client
}

// Driver runs the rounds of scatters, and keeps the scatters that should
// have one soon (Kick). Its methods are safe for concurrent use.
type Driver struct {
	o     DriverOptions
	kicks kicks
	// self names this driver in the claims of the sources it reads.
	self string

	mu sync.Mutex
	// base is the context readers run in (Serve's); nil: none run.
	base context.Context
	// reading holds the scatters whose source is read here.
	reading map[string]bool
	readers sync.WaitGroup
}

// NewDriver returns a driver over o.Store.
func NewDriver(o DriverOptions) *Driver {
	d := &Driver{o: o, self: uuid.NewString(), reading: map[string]bool{}}
	d.kicks.init()
	return d
}

// Kick asks for a round of scatter id soon. Kicks of the same scatter
// before its round merge into one.
func (d *Driver) Kick(id string) { d.kicks.kick(id) }

// Woken is sent on after a Kick, once for any number of kicks.
func (d *Driver) Woken() <-chan struct{} { return d.kicks.wake }

// Kicked returns the scatters kicked since the last call.
func (d *Driver) Kicked() []string { return d.kicks.take() }

// Drive runs rounds of a scatter until one is written (or nothing
// changed), then acts on what it decided.
func (d *Driver) Drive(ctx context.Context, id string) error {
	for range roundTries {
		rec, err := d.o.Store.GetScatter(ctx, id)
		if err != nil {
			return err
		}
		if !rec.Active {
			return nil
		}
		d.startReading(rec)
		before := storekit.CloneScatter(rec)
		r, err := Look(ctx, d.o.Store, rec)
		if err != nil {
			return err
		}
		if Same(before, rec) {
			return d.act(ctx, r)
		}
		rec.Scatter.UpdatedAt = timestamppb.New(storekit.Now())
		err = d.o.Store.UpdateScatter(ctx, rec)
		if errors.Is(err, store.ErrScatterMoved) {
			continue
		}
		if err != nil {
			return err
		}
		d.report(ctx, r)
		return d.act(ctx, r)
	}
	return nil
}

// report records the round's news as metrics and log events, once: only
// the round whose write won reports.
func (d *Driver) report(ctx context.Context, r *Round) {
	sc, log := r.Rec.Scatter, d.o.Log
	attrs := metric.WithAttributes(attribute.String("queue", sc.GetSpec().GetQueue()))
	failed := map[int32]bool{}
	for _, i := range r.Failed {
		failed[i] = true
		log.WarnContext(ctx, "scatter batch failed", "scatter_id", sc.GetScatterId(), "batch", i, "job_id", JobOf(r.Rec, i))
	}
	for _, i := range r.Ended {
		if !failed[i] {
			log.InfoContext(ctx, "scatter batch completed", "scatter_id", sc.GetScatterId(), "batch", i)
		}
	}
	d.o.Metrics.BatchesFailed.Add(ctx, int64(len(r.Failed)), attrs)
	d.o.Metrics.BatchesCompleted.Add(ctx, int64(len(r.Ended)-len(r.Failed)), attrs)
	if convert.ScatterState(sc.GetState()).IsFinal() && !r.Rec.Active {
		log.InfoContext(ctx, "scatter finished", "scatter_id", sc.GetScatterId(), "state", convert.ScatterState(sc.GetState()).String(), "error", sc.GetError())
	}
}

// act does what the written round decided to the jobs. Failures are left
// to the next round, which finds the same work undone.
func (d *Driver) act(ctx context.Context, r *Round) error {
	sc, st := r.Rec.Scatter, d.o.Store
	var errs []error
	if err := d.writeResults(ctx, r); err != nil {
		d.o.Log.WarnContext(ctx, "writing a scatter's batch results to S3 failed", "scatter_id", sc.GetScatterId(), "error", err)
		errs = append(errs, err)
	}
	if r.Gather || (!r.Rec.Active && sc.GetResultManifest() != "") {
		// The gather reads the manifest, so it is written first: a
		// round that fails to write it queues no gather, and the next
		// round tries both again.
		if err := d.writeManifest(ctx, r.Rec); err != nil {
			d.o.Log.WarnContext(ctx, "writing a scatter's result manifest to S3 failed", "scatter_id", sc.GetScatterId(), "error", err)
			return errors.Join(append(errs, err)...)
		}
	}
	for _, i := range r.Enqueue {
		errs = append(errs, d.enqueueBatch(ctx, r.Rec, i))
	}
	if r.Gather {
		errs = append(errs, d.enqueueGather(ctx, r.Rec))
	}
	if r.CancelGather {
		if _, err := st.Cancel(ctx, sc.GetGatherJobId(), "scatter "+sc.GetScatterId()+" "+sc.GetError()); err != nil && !errors.Is(err, spool.ErrNotFound) {
			errs = append(errs, err)
		}
	}
	for _, i := range r.Cancel {
		id := JobOf(r.Rec, i)
		job, err := st.Get(ctx, id)
		if errors.Is(err, spool.ErrNotFound) {
			// Its enqueue may still be on its way: create the job so the
			// cancel sticks, and the enqueue finds it cancelled.
			if err = d.enqueueBatch(ctx, r.Rec, i); err == nil {
				job, err = st.Get(ctx, id)
			}
		}
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if job.GetState() == spoolv1.JobState_JOB_STATE_RUNNING && !r.CancelRunning || convert.State(job.GetState()).IsFinal() {
			continue
		}
		if _, err := st.Cancel(ctx, id, "scatter "+sc.GetScatterId()+" "+sc.GetError()); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// enqueueBatch creates the job of batch i, or finds it created.
func (d *Driver) enqueueBatch(ctx context.Context, rec *store.ScatterRecord, i int32) error {
	sc := rec.Scatter
	items, err := d.Batch(ctx, rec, i)
	if err != nil {
		return err
	}
	k, err := CountItems(string(items))
	if err != nil {
		return fmt.Errorf("batch %d of scatter %s as stored: %w", i, sc.GetScatterId(), err)
	}
	member := &spoolv1.ScatterMember{ScatterId: sc.GetScatterId(), BatchIndex: i, BatchCount: sc.GetProgress().GetBatchCount(), ItemCount: int32(k)}
	id := JobOf(rec, i)
	created, err := d.enqueueMember(ctx, sc.GetSpec(), sc.GetSpec().GetParams(), id, member)
	if err == nil && created {
		d.o.Metrics.BatchesCreated.Add(ctx, 1, metric.WithAttributes(attribute.String("queue", sc.GetSpec().GetQueue())))
		d.o.Log.InfoContext(ctx, "scatter batch created", "scatter_id", sc.GetScatterId(), "batch", i, "job_id", id, "items", k)
	}
	return err
}

// enqueueGather creates the scatter's gather job, or finds it created.
func (d *Driver) enqueueGather(ctx context.Context, rec *store.ScatterRecord) error {
	sc := rec.Scatter
	member := &spoolv1.ScatterMember{ScatterId: sc.GetScatterId(), BatchCount: sc.GetProgress().GetBatchCount(), Gather: true}
	id := GatherOf(rec)
	created, err := d.enqueueMember(ctx, sc.GetSpec(), sc.GetSpec().GetGather(), id, member)
	if err == nil && created {
		d.o.Log.InfoContext(ctx, "scatter gather queued", "scatter_id", sc.GetScatterId(), "job_id", id)
	}
	return err
}

// enqueueMember enqueues one of a scatter's jobs under its fixed id.
func (d *Driver) enqueueMember(ctx context.Context, spec *spoolv1.ScatterSpec, params *spoolv1.JobParams, id string, m *spoolv1.ScatterMember) (bool, error) {
	_, created, err := d.o.Store.Enqueue(ctx, memberJob(spec, params, id, m, d.o.Execution(params)))
	if err == nil && created {
		d.o.Metrics.Enqueued.Add(ctx, 1, metric.WithAttributes(attribute.String("queue", spec.GetQueue())))
	}
	return created, err
}
