package scatter_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/spool-run/spool"
	spoolv1 "github.com/spool-run/spool/gen/spool/v1"
	"github.com/spool-run/spool/internal/apierr"
	"github.com/spool-run/spool/internal/scatter"
	"github.com/spool-run/spool/internal/store"
	"github.com/spool-run/spool/internal/store/storekit"
)

// jobs are the jobs of a scatter's batches by id, as a round reads them.
type jobs map[string]spoolv1.JobState

func (j jobs) Get(_ context.Context, id string) (*spoolv1.Job, error) {
	st, ok := j[id]
	if !ok {
		return nil, apierr.Errorf(spool.ErrNotFound, "job %q not found", id)
	}
	return &spoolv1.Job{JobId: id, State: st, Params: &spoolv1.JobParams{Scatter: &spoolv1.ScatterMember{ItemCount: 2}}}, nil
}

func newScatter(t *testing.T, n int, spec *spoolv1.ScatterSpec) *store.ScatterRecord {
	t.Helper()
	batches := make([]string, n)
	for i := range batches {
		batches[i] = `[1,2]`
	}
	if err := scatter.CheckSpec(spec); err != nil {
		t.Fatal(err)
	}
	rec, _, err := scatter.New(spec, batches, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	return rec
}

// A round releases batches up to the concurrency limit, counts the ones
// that ended, re-enqueues a released batch whose job is missing, and fails
// the scatter once failures pass the tolerance, cancelling what is left.
func TestRounds(t *testing.T) {
	ctx := context.Background()
	one := int32(1)
	rec := newScatter(t, 5, &spoolv1.ScatterSpec{Queue: "q", MaxConcurrency: 2, ToleratedFailureCount: &one})
	id := rec.Scatter.GetScatterId()
	js := jobs{}

	r, err := scatter.Look(ctx, js, rec)
	if err != nil || !slices.Equal(r.Enqueue, []int32{0, 1}) || rec.Released != 2 {
		t.Fatalf("first round: enqueue %v, released %d, %v; want batches 0 and 1", r.Enqueue, rec.Released, err)
	}

	// Batch 0 succeeded, batch 1's job was never made (its server
	// stopped): it is enqueued again, and one more batch released.
	js[scatter.BatchJobID(id, 0)] = spoolv1.JobState_JOB_STATE_SUCCEEDED
	r, err = scatter.Look(ctx, js, rec)
	if err != nil || !slices.Equal(r.Enqueue, []int32{1, 2}) || !slices.Equal(r.Ended, []int32{0}) {
		t.Fatalf("second round: enqueue %v, ended %v, %v", r.Enqueue, r.Ended, err)
	}
	if p := rec.Scatter.GetProgress(); p.GetSucceeded() != 1 || p.GetItemsDone() != 2 || p.GetWaiting() != 2 {
		t.Fatalf("progress after the second round: %v", p)
	}

	// Two failures pass a tolerance of one: the scatter fails, the
	// batches never released count as cancelled, and the one queued is
	// cancelled.
	js[scatter.BatchJobID(id, 1)] = spoolv1.JobState_JOB_STATE_FAILED
	js[scatter.BatchJobID(id, 2)] = spoolv1.JobState_JOB_STATE_FAILED
	rec.Released = 4
	js[scatter.BatchJobID(id, 3)] = spoolv1.JobState_JOB_STATE_QUEUED
	r, err = scatter.Look(ctx, js, rec)
	if err != nil {
		t.Fatal(err)
	}
	sc := rec.Scatter
	if sc.GetState() != spoolv1.ScatterState_SCATTER_STATE_FAILED || !slices.Equal(r.Cancel, []int32{3}) || r.CancelRunning || !rec.Active {
		t.Fatalf("a round past the tolerance: state %v, cancel %v (running too: %v), active %v", sc.GetState(), r.Cancel, r.CancelRunning, rec.Active)
	}
	b1, b2 := scatter.BatchJobID(id, 1), scatter.BatchJobID(id, 2)
	if want := "2 of 5 batches failed, more than the 1 tolerated; failed jobs: " + b1 + ", " + b2 + " (spool logs " + b1 + ")"; sc.GetError() != want {
		t.Fatalf("error %q, want %q", sc.GetError(), want)
	}
	if got := sc.GetFailedJobIds(); !slices.Equal(got, []string{b1, b2}) {
		t.Fatalf("failed jobs %v, want %v", got, []string{b1, b2})
	}
}

// A redrive runs again only the batches that failed or never ran, as new
// jobs, within the concurrency limit; it keeps what succeeded; the gather
// runs again in a job of its own. A scatter running or succeeded is not
// redriven.
func TestRedrive(t *testing.T) {
	ctx := context.Background()
	rec := newScatter(t, 4, &spoolv1.ScatterSpec{Queue: "q", MaxConcurrency: 1, Gather: &spoolv1.JobParams{Script: "cat"}})
	id := rec.Scatter.GetScatterId()
	js := jobs{}
	wantConflict := func(what string) {
		t.Helper()
		if err := scatter.Redrive(storekit.CloneScatter(rec)); !errors.Is(err, spool.ErrConflict) {
			t.Fatalf("redrive of %s: %v, want a conflict", what, err)
		}
	}
	round := func() *scatter.Round {
		t.Helper()
		r, err := scatter.Look(ctx, js, rec)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	round()
	wantConflict("a running scatter")
	js[scatter.BatchJobID(id, 0)] = spoolv1.JobState_JOB_STATE_SUCCEEDED
	round()
	js[scatter.BatchJobID(id, 1)] = spoolv1.JobState_JOB_STATE_FAILED
	if round(); rec.Scatter.GetState() != spoolv1.ScatterState_SCATTER_STATE_FAILED || rec.Active {
		t.Fatalf("after batch 1 failed: %v, active %v", rec.Scatter.GetState(), rec.Active)
	}

	if err := scatter.Redrive(rec); err != nil {
		t.Fatal(err)
	}
	sc, p := rec.Scatter, rec.Scatter.GetProgress()
	if sc.GetState() != spoolv1.ScatterState_SCATTER_STATE_RUNNING || sc.GetRedriveCount() != 1 || sc.GetError() != "" || len(sc.GetFailedJobIds()) != 0 ||
		p.GetSucceeded() != 1 || p.GetWaiting() != 3 || p.GetFailed()+p.GetCancelled() != 0 || !rec.Active {
		t.Fatalf("redriven: %v", sc)
	}
	wantConflict("a redriven scatter, running again")
	// One at a time, in index order, under new ids.
	for i := int32(1); i < 4; i++ {
		r := round()
		want := fmt.Sprintf("%s.%d.r1", id, i)
		if !slices.Equal(r.Enqueue, []int32{i}) || scatter.JobOf(rec, i) != want {
			t.Fatalf("redrive round %d: enqueue %v as %s, want batch %d as %s", i, r.Enqueue, scatter.JobOf(rec, i), i, want)
		}
		js[want] = spoolv1.JobState_JOB_STATE_SUCCEEDED
	}
	if got := scatter.JobOf(rec, 0); got != scatter.BatchJobID(id, 0) {
		t.Fatalf("the batch that succeeded has job %s now, want its first", got)
	}
	r := round()
	if !r.Gather || sc.GetGatherJobId() != scatter.GatherJobID(id)+".r1" {
		t.Fatalf("after the redriven batches: gather %v as %q", r.Gather, sc.GetGatherJobId())
	}
	js[sc.GetGatherJobId()] = spoolv1.JobState_JOB_STATE_SUCCEEDED
	round()
	if sc.GetState() != spoolv1.ScatterState_SCATTER_STATE_SUCCEEDED || p.GetSucceeded() != 4 || p.GetItemsDone() != 8 || rec.Active {
		t.Fatalf("after the gather: %v", sc)
	}
	wantConflict("a succeeded scatter")
}

// The failure tolerance, as Step Functions reads it: none set tolerates
// no failure; a count or a percentage tolerates up to itself.
func TestTolerance(t *testing.T) {
	count := func(n int32) *int32 { return &n }
	pct := func(p float32) *float32 { return &p }
	for _, tc := range []struct {
		spec   *spoolv1.ScatterSpec
		failed int32
		want   bool
		says   string
	}{
		{&spoolv1.ScatterSpec{}, 0, false, "0"},
		{&spoolv1.ScatterSpec{}, 1, true, "0"},
		{&spoolv1.ScatterSpec{ToleratedFailureCount: count(2)}, 2, false, "2"},
		{&spoolv1.ScatterSpec{ToleratedFailureCount: count(2)}, 3, true, "2"},
		{&spoolv1.ScatterSpec{ToleratedFailurePercentage: pct(20)}, 2, false, "20%"},
		{&spoolv1.ScatterSpec{ToleratedFailurePercentage: pct(20)}, 3, true, "20%"},
		{&spoolv1.ScatterSpec{ToleratedFailureCount: count(5), ToleratedFailurePercentage: pct(20)}, 3, true, "5 or 20%"},
	} {
		rec := newScatter(t, 10, tc.spec)
		for i := range tc.failed {
			rec.Failed.Set(i)
		}
		name := fmt.Sprintf("%s with %d failed", scatter.Tolerance(tc.spec), tc.failed)
		if got := scatter.TooManyFailed(rec); got != tc.want {
			t.Errorf("%s: too many %v, want %v", name, got, tc.want)
		}
		if got := scatter.Tolerance(tc.spec); got != tc.says {
			t.Errorf("tolerance says %q, want %q", got, tc.says)
		}
	}
}

// A redriven scatter cancelled before its held batches ran counts them as
// cancelled, and may be redriven again.
func TestRedriveCancelled(t *testing.T) {
	ctx := context.Background()
	rec := newScatter(t, 3, &spoolv1.ScatterSpec{Queue: "q", MaxConcurrency: 1})
	id := rec.Scatter.GetScatterId()
	js := jobs{scatter.BatchJobID(id, 0): spoolv1.JobState_JOB_STATE_FAILED}
	for range 2 {
		if _, err := scatter.Look(ctx, js, rec); err != nil {
			t.Fatal(err)
		}
	}
	if err := scatter.Redrive(rec); err != nil {
		t.Fatal(err)
	}
	r, err := scatter.Look(ctx, js, rec)
	if err != nil || !slices.Equal(r.Enqueue, []int32{0}) {
		t.Fatalf("the redrive's first round: enqueue %v, %v", r.Enqueue, err)
	}
	scatter.Stop(rec, spoolv1.ScatterState_SCATTER_STATE_CANCELLED, "cancelled")
	js[id+".0.r1"] = spoolv1.JobState_JOB_STATE_CANCELLED
	if _, err := scatter.Look(ctx, js, rec); err != nil {
		t.Fatal(err)
	}
	p := rec.Scatter.GetProgress()
	if p.GetCancelled() != 3 || p.GetWaiting() != 0 || rec.Held.Count() != 0 || rec.Active {
		t.Fatalf("cancelled during its redrive: %v, held %d, active %v", p, rec.Held.Count(), rec.Active)
	}
	if err := scatter.Redrive(rec); err != nil || rec.Scatter.GetRedriveCount() != 2 || scatter.JobOf(rec, 2) != id+".2.r2" {
		t.Fatalf("a second redrive: %v, count %d, batch 2's job %s", err, rec.Scatter.GetRedriveCount(), scatter.JobOf(rec, 2))
	}
}
