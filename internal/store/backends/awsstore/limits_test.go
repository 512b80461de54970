package awsstore_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"testing"
	"time"

	"github.com/spool-run/spool"
	spoolv1 "github.com/spool-run/spool/gen/spool/v1"
	"github.com/spool-run/spool/internal/events"
	"github.com/spool-run/spool/internal/store"
	"github.com/spool-run/spool/internal/store/backends/awsstore"
	"github.com/spool-run/spool/internal/store/storekit"
)

// lineOfPayload returns a one-line batch at seq, holding line, whose
// stored payload (with the attempt and first line the store fills in) is
// exactly size bytes. Random output does not compress.
func lineOfPayload(t *testing.T, seq, line int64, size int) *spoolv1.JobEvent {
	t.Helper()
	n := size
	for range 10 {
		out := make([]byte, n)
		_, _ = rand.Read(out)
		ev := batch(seq, string(out))
		ev.Attempt, ev.GetOutputBatch().FirstLine = 1, line
		b, err := events.Encode(ev)
		if err != nil {
			t.Fatal(err)
		}
		if len(b) == size {
			return ev
		}
		n += size - len(b)
	}
	t.Fatalf("cannot make an event of %d bytes", size)
	return nil
}

// TestLargestItemFits: an event of Limits().MaxItemBytes is stored by
// DynamoDB (whose 400 KB limit counts every attribute) and read back
// whole; one byte more is refused before anything is written.
func TestLargestItemFits(t *testing.T) {
	t.Parallel()
	s := freshStore(t)
	ctx := context.Background()
	if got := s.Limits().MaxItemBytes; got != awsstore.MaxItemBytes || got > 400<<10-512 {
		t.Fatalf("MaxItemBytes %d leaves no room for the other attributes", got)
	}
	nj := newJob(newQueue())
	nj.Execution.Batching.MaxBatchBytes = 1 << 20
	l := running(t, s, nj, time.Minute)

	big := lineOfPayload(t, 1, 1, awsstore.MaxItemBytes)
	if _, err := s.Append(ctx, l.LeaseRef, events.Messages(big)); err != nil {
		t.Fatalf("append of a %d-byte event: %v", awsstore.MaxItemBytes, err)
	}
	var got []*spoolv1.JobEvent
	for ev, err := range storekit.Read(ctx, s, store.ReadRequest{JobID: l.JobID, FromSequence: 1}) {
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, ev)
	}
	if len(got) != 1 || !bytes.Equal(got[0].GetOutputBatch().GetOutputs()[0].GetOutput(), big.GetOutputBatch().GetOutputs()[0].GetOutput()) {
		t.Fatal("the largest event did not come back whole")
	}
	tooBig := lineOfPayload(t, 2, 2, awsstore.MaxItemBytes+1)
	if _, err := s.Append(ctx, l.LeaseRef, events.Messages(tooBig)); !errors.Is(err, spool.ErrInvalidArgument) {
		t.Fatalf("append of an event over the limit: %v, want invalid", err)
	}
}
