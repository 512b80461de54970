package conformance

import (
	"context"
	"strings"
	"testing"

	spoolv1 "github.com/spool-run/spool/gen/spool/v1"
	"github.com/spool-run/spool/internal/events"
	"github.com/spool-run/spool/internal/store"
)

// capabilityCases are the cases of the optional features b's stores
// declare (store.Capabilities). A feature a backend runs without is named
// in the test log, with the cases that are therefore not run, so that a
// backend that stops declaring one is seen to run fewer cases.
func capabilityCases(t *testing.T, b Backend) []struct {
	name string
	fn   func(t *testing.T, b Backend)
} {
	type named = struct {
		name string
		fn   func(t *testing.T, b Backend)
	}
	probe := b.Open(t)
	caps := probe.Capabilities()
	_ = probe.Close()
	features := []struct {
		name    string
		offered bool
		cases   []named
	}{
		{"Finisher", caps.Finisher != nil, []named{{"FinishStoresEventsAndResultTogether", testFinish}}},
		{"LeaseGracer", caps.LeaseGracer != nil, []named{{"GraceLeasesAfterAnOutage", testGraceLeases}, {"GraceLeavesExternalJobs", testGraceLeavesExternalJobs}}},
		// Sharing follows needs two servers: the backend's own tests
		// cover it.
		{"WatchSharer", caps.WatchSharer != nil, nil},
		{"SpaceReclaimer", caps.SpaceReclaimer != nil, []named{{"ReclaimSpaceKeepsWhatIsLeft", testReclaimSpace}}},
		{"Pinger", caps.Pinger != nil, []named{{"PingAnswers", testPing}}},
		// Retries happen under contention and throttling: the
		// backends' own tests make them.
		{"RetryReporter", caps.RetryReporter != nil, nil},
		// Sharing workers needs two servers: RunShared has its case.
		{"PollerSharer", caps.PollerSharer != nil, nil},
	}
	var out []named
	for _, f := range features {
		if f.offered {
			out = append(out, f.cases...)
			continue
		}
		skipped := "the suite has no case of it"
		if len(f.cases) > 0 {
			names := make([]string, len(f.cases))
			for i, c := range f.cases {
				names[i] = c.name
			}
			skipped = "not run: " + strings.Join(names, ", ")
		}
		t.Logf("this backend runs without store.Capabilities.%s (%s)", f.name, skipped)
	}
	return out
}

// testReclaimSpace: giving back the space of deleted jobs, again and
// again, leaves every job that was not deleted as it was, log and all.
func testReclaimSpace(t *testing.T, b Backend) {
	s := open(t, b)
	ctx := context.Background()
	q := newQueue()
	var gone []string
	for range 5 {
		l := seqJob(t, s, q, 200, 50)
		if _, err := s.Complete(ctx, l.LeaseRef, &spoolv1.JobResult{}); err != nil {
			t.Fatal(err)
		}
		gone = append(gone, l.JobID)
	}
	kept := seqJob(t, s, q, 120, 50)
	for _, id := range gone {
		if err := s.DeleteJob(ctx, id); err != nil {
			t.Fatal(err)
		}
	}
	r := s.Capabilities().SpaceReclaimer
	for i := range 3 {
		if err := r.ReclaimSpace(ctx); err != nil {
			t.Fatalf("ReclaimSpace %d: %v", i+1, err)
		}
	}
	wantState(t, get(t, s, kept.JobID), spoolv1.JobState_JOB_STATE_RUNNING)
	items, _ := readItems(t, s, store.ReadRequest{JobID: kept.JobID, FromSequence: 1})
	lines := 0
	for _, ev := range items {
		lines += len(events.Unpack(ev))
	}
	// PROCESS_START, 120 lines, PROCESS_END.
	if lines != 122 {
		t.Fatalf("the kept job's log has %d events after ReclaimSpace, want 122", lines)
	}
}

// testPing: an open store answers its ping, again and again, and a ping
// whose context has ended fails rather than hangs.
func testPing(t *testing.T, b Backend) {
	s := open(t, b)
	p := s.Capabilities().Pinger
	for range 3 {
		if err := p.Ping(context.Background()); err != nil {
			t.Fatalf("ping of an open store: %v", err)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := p.Ping(ctx); err == nil {
		t.Fatal("a ping with its context ended answered nil")
	}
}
