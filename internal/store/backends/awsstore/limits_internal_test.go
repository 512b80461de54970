package awsstore

import (
	"maps"
	"testing"

	"github.com/google/uuid"

	"github.com/spool-run/spool/internal/store"
)

// TestHoldersRoundTrip: the holders of a queue's slots read back as
// written, job ids that are UUIDs or not; the most a limit allows fits a
// DynamoDB item; damaged bytes are an error, not a wrong count.
func TestHoldersRoundTrip(t *testing.T) {
	h := map[string]int32{"named-batch-job-7": 3, uuid.Must(uuid.NewV7()).String(): 1}
	got, err := decodeHolders(encodeHolders(h))
	if err != nil || !maps.Equal(got, h) {
		t.Fatalf("read back %v (%v), want %v", got, err, h)
	}
	if got, err := decodeHolders(nil); err != nil || len(got) != 0 {
		t.Fatalf("no holders read back as %v (%v)", got, err)
	}
	full := map[string]int32{}
	for i := range store.MaxQueueRunning {
		full[uuid.Must(uuid.NewV7()).String()] = int32(i%5 + 1)
	}
	b := encodeHolders(full)
	if len(b) > dynamoItemLimit/2 {
		t.Fatalf("%d holders take %d bytes, too near DynamoDB's item limit of %d", len(full), len(b), dynamoItemLimit)
	}
	got, err = decodeHolders(b)
	if err != nil || !maps.Equal(got, full) {
		t.Fatalf("%d holders read back as %d (%v)", len(full), len(got), err)
	}
	for _, bad := range [][]byte{{0, 1, 2}, {1, 50, 'x'}, {7}, append([]byte{1, 1, 'x'}, 0xff)} {
		if _, err := decodeHolders(bad); err == nil {
			t.Errorf("damaged holders %v read without an error", bad)
		}
	}
	t.Logf("%d holders: %d bytes", len(full), len(b))
}
