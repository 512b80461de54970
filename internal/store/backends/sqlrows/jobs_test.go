package sqlrows

import (
	"database/sql"
	"fmt"
	"reflect"
	"slices"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	spoolv1 "github.com/spool-run/spool/gen/spool/v1"
)

// setTime agrees with timestamppb.New on times before and after 1970 and
// on whole seconds.
func TestSetTime(t *testing.T) {
	for _, us := range []int64{0, 1, 999_999, 1_000_000, 1_764_000_123_456_789 / 1000, -1, -999_999, -1_000_000, -1_500_001} {
		want := timestamppb.New(time.UnixMicro(us))
		if got := setTime(&timestamppb.Timestamp{}, us); !proto.Equal(got, want) {
			t.Errorf("setTime(%d) = %v, want %v", us, got, want)
		}
	}
}

// rowScanner hands ScanJob a row's columns as a driver would.
type rowScanner []any

func (r rowScanner) Scan(dest ...any) error {
	if len(dest) != len(r) {
		return fmt.Errorf("%d columns, %d destinations", len(r), len(dest))
	}
	for i, d := range dest {
		if sc, ok := d.(sql.Scanner); ok {
			if err := sc.Scan(r[i]); err != nil {
				return err
			}
			continue
		}
		v := reflect.ValueOf(d).Elem()
		switch x := r[i].(type) {
		case nil:
			v.Set(reflect.Zero(v.Type()))
		default:
			v.Set(reflect.ValueOf(x).Convert(v.Type()))
		}
	}
	return nil
}

// ScanJob reads every column into its place, and the job's times and
// decoded messages come out as stored; a job's row costs few objects
// beyond its decoded messages.
func TestScanJob(t *testing.T) {
	params := Marshal(&spoolv1.JobParams{Argv: []string{"echo", "hi"}})
	exec := Marshal(&spoolv1.ExecutionConfig{HeartbeatIntervalSeconds: 30})
	res := Marshal(&spoolv1.JobResult{ExitCode: 3})
	const created, updated, started, expires = int64(1_764_000_000_000_001), int64(1_764_000_000_500_000), int64(1_764_000_000_400_000), int64(1_764_000_060_000_000)
	const notifyDue = int64(1_764_000_070_000_000)
	row := rowScanner{"job-1", "q", int32(Running), "req-1", created, updated, int32(2), int32(3),
		true, "lease-1", expires, int64(7), int64(5), params, exec, res, int32(1), nil, started, nil, notifyDue, int32(3)}
	r, err := ScanJob(row)
	if err != nil {
		t.Fatal(err)
	}
	j := r.Job
	want := &spoolv1.Job{JobId: "job-1", Queue: "q", State: spoolv1.JobState_JOB_STATE_RUNNING, RequestId: "req-1",
		CreatedAt: timestamppb.New(time.UnixMicro(created)), UpdatedAt: timestamppb.New(time.UnixMicro(updated)),
		StartedAt: timestamppb.New(time.UnixMicro(started)), LeaseExpiresAt: timestamppb.New(time.UnixMicro(expires)),
		Attempt: 2, MaxAttempts: 3, Retries: 1, CancelRequested: true, LastSequence: 6, LineCount: 4,
		Params: &spoolv1.JobParams{Argv: []string{"echo", "hi"}}, ExecutionConfig: &spoolv1.ExecutionConfig{HeartbeatIntervalSeconds: 30},
		Result: &spoolv1.JobResult{ExitCode: 3}, NotifyDue: timestamppb.New(time.UnixMicro(notifyDue)), Priority: 3}
	if !proto.Equal(j, want) {
		t.Fatalf("scanned\n%v\nwant\n%v", j, want)
	}
	if r.LeaseID != "lease-1" || !r.Expires.Equal(time.UnixMicro(expires)) || r.Head.NextSequence != 7 || r.Head.NextLine != 5 {
		t.Fatalf("row: lease %q, expires %v, head %+v", r.LeaseID, r.Expires, r.Head)
	}
	// A queued job: no request id, lease, expiry, start or webhooks owed.
	queued := slices.Clone(row)
	queued[2], queued[3], queued[9], queued[10], queued[18], queued[20] = int32(Queued), nil, nil, nil, nil, nil
	r, err = ScanJob(queued)
	if err != nil {
		t.Fatal(err)
	}
	if j := r.Job; j.RequestId != "" || j.StartedAt != nil || j.LeaseExpiresAt != nil || r.LeaseID != "" || !r.Expires.IsZero() || j.NotifyDue != nil {
		t.Fatalf("a queued job's NULL columns read as %q, %v, %v, lease %q, expires %v, notify due %v", j.RequestId, j.StartedAt, j.LeaseExpiresAt, r.LeaseID, r.Expires, j.NotifyDue)
	}
	// The run_after column is the job's, whatever its bookkeeping says
	// (rows written before it was the truth).
	scheduled := slices.Clone(row)
	scheduled[2], scheduled[17], scheduled[19] = int32(Scheduled), Marshal(&spoolv1.Job{RunAfter: timestamppb.New(time.UnixMicro(1))}), expires
	if r, err = ScanJob(scheduled); err != nil || !r.Job.GetRunAfter().AsTime().Equal(time.UnixMicro(expires)) {
		t.Fatalf("run_after read as %v (%v), want the column's", r.Job.GetRunAfter(), err)
	}
	allocs := testing.AllocsPerRun(100, func() {
		if _, err := ScanJob(row); err != nil {
			t.Fatal(err)
		}
	})
	// The row with its job, its times and the places its columns are
	// scanned into is one object; the decoded params, execution config and
	// result, and the call's own arguments, are the rest: 16 here, where a
	// place and a time each an object of its own made 31.
	if allocs > 20 {
		t.Fatalf("ScanJob made %.0f objects; want at most 20", allocs)
	}
}
