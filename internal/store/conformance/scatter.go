package conformance

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/metric/noop"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/spool-run/spool"
	spoolv1 "github.com/spool-run/spool/gen/spool/v1"
	"github.com/spool-run/spool/internal/scatter"
	"github.com/spool-run/spool/internal/store"
	"github.com/spool-run/spool/internal/store/storekit"
)

// newScatter returns a record of a new scatter of n batches, and its
// batches: batch i holds i+1 items.
func newScatter(n int32) (*store.ScatterRecord, [][]byte) {
	now := timestamppb.New(storekit.Now())
	sc := &spoolv1.Scatter{
		ScatterId: uuid.Must(uuid.NewV7()).String(),
		State:     spoolv1.ScatterState_SCATTER_STATE_RUNNING,
		Spec: &spoolv1.ScatterSpec{
			Queue: newQueue(), Params: &spoolv1.JobParams{Argv: []string{"resize", "--width", "800"}},
			BatchInput: `{"width":800}`, MaxConcurrency: 2,
		},
		Progress:  &spoolv1.ScatterProgress{BatchCount: n, Waiting: n},
		CreatedAt: now, UpdatedAt: now,
	}
	batches := make([][]byte, n)
	for i := range batches {
		items := make([]string, i+1)
		for k := range items {
			items[k] = fmt.Sprintf(`{"key":"img-%d-%d.png"}`, i, k)
		}
		batches[i] = []byte("[" + strings.Join(items, ",") + "]")
	}
	return &store.ScatterRecord{Scatter: sc, Active: true, Ended: store.NewBits(n), Failed: store.NewBits(n)}, batches
}

// testScatters: a scatter and its batches are stored together, read back as
// written, replaced only from the version read, and listed newest first.
func testScatters(t *testing.T, b Backend) {
	s := open(t, b)
	ctx := context.Background()
	rec, batches := newScatter(3)
	// A batch bigger than a DynamoDB item (400 KB): stores split what they
	// must and give it back whole.
	big := bytes.Repeat([]byte("x"), 900<<10)
	batches[1] = []byte(`["` + string(big) + `"]`)
	if err := s.CreateScatter(ctx, rec, batches); err != nil {
		t.Fatal(err)
	}
	if rec.Version != 1 {
		t.Fatalf("a new scatter is version %d, want 1", rec.Version)
	}
	again, _ := newScatter(1)
	again.Scatter.ScatterId = rec.Scatter.GetScatterId()
	wantErr(t, s.CreateScatter(ctx, again, [][]byte{[]byte(`[1]`)}), spool.ErrAlreadyExists, "a second scatter with an id in use")

	got, err := s.GetScatter(ctx, rec.Scatter.GetScatterId())
	if err != nil {
		t.Fatal(err)
	}
	wantScatter(t, got, rec)
	for i, want := range batches {
		b, err := s.ScatterBatch(ctx, rec.Scatter.GetScatterId(), int32(i))
		if err != nil || !bytes.Equal(b, want) {
			t.Fatalf("batch %d: %d bytes, %v; want %d bytes", i, len(b), err, len(want))
		}
	}
	_, err = s.ScatterBatch(ctx, rec.Scatter.GetScatterId(), 3)
	wantErr(t, err, spool.ErrNotFound, "a batch past the last")
	_, err = s.GetScatter(ctx, uuid.Must(uuid.NewV7()).String())
	wantErr(t, err, spool.ErrNotFound, "an unknown scatter")

	// A driver's round: batches released, one ended and failed.
	got.Released = 2
	got.Ended.Set(1)
	got.Failed.Set(1)
	got.Scatter.Progress.Queued, got.Scatter.Progress.Failed, got.Scatter.Progress.ItemsDone = 1, 1, 7
	if err := s.UpdateScatter(ctx, got); err != nil {
		t.Fatal(err)
	}
	if got.Version != 2 {
		t.Fatalf("after one update the scatter is version %d, want 2", got.Version)
	}
	stale, _ := s.GetScatter(ctx, rec.Scatter.GetScatterId())
	wantScatter(t, stale, got)
	stale.Version = 1
	wantErr(t, s.UpdateScatter(ctx, stale), store.ErrScatterMoved, "an update from a version read before another's")

	got.Active = false
	got.Scatter.State = spoolv1.ScatterState_SCATTER_STATE_FAILED
	if err := s.UpdateScatter(ctx, got); err != nil {
		t.Fatal(err)
	}
	final, _ := s.GetScatter(ctx, rec.Scatter.GetScatterId())
	wantScatter(t, final, got)
}

// wantScatter fails unless got is want as stored.
func wantScatter(t *testing.T, got, want *store.ScatterRecord) {
	t.Helper()
	if !proto.Equal(got.Scatter, want.Scatter) || got.Version != want.Version || got.Active != want.Active ||
		got.Released != want.Released ||
		!bytes.Equal(got.Ended, want.Ended) || !bytes.Equal(got.Failed, want.Failed) {
		t.Fatalf("scatter read back as\n%+v\nwant\n%+v", got, want)
	}
}

// testScatterRace: of drivers updating from the same version, one wins.
func testScatterRace(t *testing.T, b Backend) {
	s := open(t, b)
	ctx := context.Background()
	rec, batches := newScatter(2)
	if err := s.CreateScatter(ctx, rec, batches); err != nil {
		t.Fatal(err)
	}
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		wins []int32
	)
	for i := range int32(6) {
		wg.Go(func() {
			mine, err := s.GetScatter(ctx, rec.Scatter.GetScatterId())
			if err != nil {
				t.Error(err)
				return
			}
			mine.Version = 1
			mine.Released = i
			switch err := s.UpdateScatter(ctx, mine); {
			case err == nil:
				mu.Lock()
				wins = append(wins, i)
				mu.Unlock()
			case !errors.Is(err, store.ErrScatterMoved):
				t.Errorf("a lost race: %v, want ErrScatterMoved", err)
			}
		})
	}
	wg.Wait()
	if len(wins) != 1 {
		t.Fatalf("%d updates from version 1 won, want exactly 1", len(wins))
	}
	got, _ := s.GetScatter(ctx, rec.Scatter.GetScatterId())
	if got.Version != 2 || got.Released != wins[0] {
		t.Fatalf("stored version %d released %d, want the winner's (2, %d)", got.Version, got.Released, wins[0])
	}
}

// testListScatters: newest first, a page at a time, and the active ones
// alone. Other tests' scatters may be listed too: only the order of ours is
// checked.
func testListScatters(t *testing.T, b Backend) {
	s := open(t, b)
	ctx := context.Background()
	var ours []string
	for i := range 5 {
		rec, batches := newScatter(1)
		rec.Active = i%2 == 0
		if err := s.CreateScatter(ctx, rec, batches); err != nil {
			t.Fatal(err)
		}
		ours = append(ours, rec.Scatter.GetScatterId())
	}
	list := func(active bool) []string {
		var seen []string
		cursor := ""
		for range 1000 {
			page, next, err := s.ListScatters(ctx, store.ScatterFilter{Active: active, Limit: 2, Cursor: cursor})
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range page {
				if active && !r.Active {
					t.Fatalf("an inactive scatter listed as active: %s", r.Scatter.GetScatterId())
				}
				for _, id := range ours {
					if id == r.Scatter.GetScatterId() {
						seen = append(seen, id)
					}
				}
			}
			if next == "" {
				return seen
			}
			cursor = next
		}
		t.Fatal("the listing never ended")
		return nil
	}
	if got, want := strings.Join(list(false), " "), strings.Join([]string{ours[4], ours[3], ours[2], ours[1], ours[0]}, " "); got != want {
		t.Fatalf("listed\n%s\nwant newest first\n%s", got, want)
	}
	if got, want := strings.Join(list(true), " "), strings.Join([]string{ours[4], ours[2], ours[0]}, " "); got != want {
		t.Fatalf("active listed\n%s\nwant\n%s", got, want)
	}
}

// testJobNamedByCaller: a job enqueued with an id keeps it, and a repeat of
// its request returns it.
func testJobNamedByCaller(t *testing.T, b Backend) {
	s := open(t, b)
	id := uuid.Must(uuid.NewV7()).String() + ".4"
	nj := newJob(newQueue())
	nj.ID, nj.RequestID = id, "scatter:"+id
	j := enqueue(t, s, nj)
	if j.GetJobId() != id {
		t.Fatalf("job id %q, want %q", j.GetJobId(), id)
	}
	again, created, err := s.Enqueue(context.Background(), nj)
	if err != nil || created || again.GetJobId() != id {
		t.Fatalf("repeat: %v created=%v %v", again.GetJobId(), created, err)
	}
	if got, err := s.Get(context.Background(), id); err != nil || got.GetJobId() != id {
		t.Fatalf("Get: %v %v", got, err)
	}
}

// scatterSurvivesReopen is the persistence test's part for scatters.
func scatterSurvivesReopen(t *testing.T, after store.JobStore, rec *store.ScatterRecord, batches [][]byte) {
	t.Helper()
	got, err := after.GetScatter(context.Background(), rec.Scatter.GetScatterId())
	if err != nil {
		t.Fatal(err)
	}
	wantScatter(t, got, rec)
	for i, want := range batches {
		b, err := after.ScatterBatch(context.Background(), rec.Scatter.GetScatterId(), int32(i))
		if err != nil || !bytes.Equal(b, want) {
			t.Fatalf("batch %d after reopening: %q %v", i, b, err)
		}
	}
}

// testScatterRedrive: a scatter redriven on the store runs its failed and
// never-run batches again as new jobs, one at a time under its limit,
// keeps the job and result of the batch that succeeded, and gathers again;
// the redrive's bookkeeping (held batches, each batch's run) is stored and
// read back. A redrive of a scatter running, or succeeded, is refused.
func testScatterRedrive(t *testing.T, b Backend) {
	s := open(t, b)
	ctx := context.Background()
	q := newQueue()
	spec := &spoolv1.ScatterSpec{Queue: q, Params: &spoolv1.JobParams{Argv: []string{"resize"}}, BatchInput: "{}", MaxConcurrency: 1, MaxAttempts: 1,
		Gather: &spoolv1.JobParams{Script: "cat"}}
	rec, batches, err := scatter.New(spec, []string{`[1]`, `[2,3]`, `[4]`}, storekit.Now())
	if err != nil {
		t.Fatal(err)
	}
	if err := s.CreateScatter(ctx, rec, batches); err != nil {
		t.Fatal(err)
	}
	id := rec.Scatter.GetScatterId()
	meter := noop.NewMeterProvider().Meter("conformance")
	counter := func() metric.Int64Counter { c, _ := meter.Int64Counter("c"); return c }
	d := scatter.NewDriver(scatter.DriverOptions{Store: s, Execution: func(*spoolv1.JobParams) *spoolv1.ExecutionConfig { return defaultExec() }, Log: slog.New(slog.DiscardHandler),
		Metrics: scatter.Metrics{Enqueued: counter(), BatchesCreated: counter(), BatchesCompleted: counter(), BatchesFailed: counter()}})
	// finish drives the scatter, takes its one queued job, which must be
	// want, and ends it with exit status code.
	finish := func(want string, code int32) {
		t.Helper()
		if err := d.Drive(ctx, id); err != nil {
			t.Fatal(err)
		}
		l := leaseOne(t, s, q, time.Minute)
		if l.Job.GetJobId() != want {
			t.Fatalf("the queued job is %s, want %s", l.Job.GetJobId(), want)
		}
		if _, err := s.Complete(ctx, l.LeaseRef, &spoolv1.JobResult{ExitCode: code, Output: fmt.Sprintf(`{"job":%q}`, want)}); err != nil {
			t.Fatal(err)
		}
	}
	redrive := func() (*store.ScatterRecord, error) {
		t.Helper()
		rec, err := s.GetScatter(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if err := scatter.Redrive(rec); err != nil {
			return nil, err
		}
		return rec, s.UpdateScatter(ctx, rec)
	}
	state := func() *store.ScatterRecord {
		t.Helper()
		if err := d.Drive(ctx, id); err != nil {
			t.Fatal(err)
		}
		rec, err := s.GetScatter(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		return rec
	}

	finish(id+".0", 0)
	finish(id+".1", 1)
	failed := state()
	if failed.Scatter.GetState() != spoolv1.ScatterState_SCATTER_STATE_FAILED || failed.Active ||
		!slices.Equal(failed.Scatter.GetFailedJobIds(), []string{id + ".1"}) {
		t.Fatalf("after batch 1 failed: %v, active %v", failed.Scatter, failed.Active)
	}

	redriven, err := redrive()
	if err != nil {
		t.Fatal(err)
	}
	got, err := s.GetScatter(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	wantScatter(t, got, redriven)
	if got.Held.Count() != 2 || got.Gen[1] != 1 || got.Gen[2] != 1 || got.Gen[0] != 0 {
		t.Fatalf("redrive stored held %08b, runs %v; want batches 1 and 2 held, in redrive 1", got.Held, got.Gen)
	}
	if _, err := redrive(); !errors.Is(err, spool.ErrConflict) {
		t.Fatalf("a redrive of a running scatter: %v, want a conflict", err)
	}

	finish(id+".1.r1", 0)
	finish(id+".2.r1", 0)
	finish(id+".gather.r1", 0)
	done := state()
	p := done.Scatter.GetProgress()
	if done.Scatter.GetState() != spoolv1.ScatterState_SCATTER_STATE_SUCCEEDED || p.GetSucceeded() != 3 || p.GetItemsDone() != 4 ||
		p.GetFailed()+p.GetCancelled()+p.GetWaiting() != 0 || done.Scatter.GetRedriveCount() != 1 {
		t.Fatalf("after the redrive: %v", done.Scatter)
	}
	if first := get(t, s, id+".0"); first.GetResult().GetOutput() != fmt.Sprintf(`{"job":%q}`, id+".0") {
		t.Fatalf("the batch that succeeded first: %v", first)
	}
	if old := get(t, s, id+".1"); old.GetState() != spoolv1.JobState_JOB_STATE_FAILED {
		t.Fatalf("the failed batch's first job is %v now, want it kept as it failed", old.GetState())
	}
	if _, err := redrive(); !errors.Is(err, spool.ErrConflict) {
		t.Fatalf("a redrive of a succeeded scatter: %v, want a conflict", err)
	}
}
