package pgblob_test

import (
	"context"
	"testing"

	"go.uber.org/goleak"

	"github.com/spool-run/spool/internal/blob"
	"github.com/spool-run/spool/internal/blob/blobtest"
	"github.com/spool-run/spool/internal/blob/pgblob"
	"github.com/spool-run/spool/internal/store/backends/pgstore/pgtest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func open(t *testing.T, url string) *pgblob.Store {
	t.Helper()
	s, err := pgblob.Open(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func TestConformance(t *testing.T) {
	blobtest.Run(t, func(t *testing.T) blob.Store { return open(t, pgtest.NewDatabase(t)) })
}

// TestTwoServers opens two stores on one database at once, as two servers
// starting together do, and checks each sees the other's blobs.
func TestTwoServers(t *testing.T) {
	url := pgtest.NewDatabase(t)
	stores := make(chan *pgblob.Store, 2)
	for range 2 {
		go func() {
			s, err := pgblob.Open(context.Background(), url)
			if err != nil {
				t.Error(err)
			}
			stores <- s
		}()
	}
	a, b := <-stores, <-stores
	if a == nil || b == nil {
		t.FailNow()
	}
	defer a.Close()
	defer b.Close()
	ctx := context.Background()
	if _, err := a.Put(ctx, "shared", blobReader("from a")); err != nil {
		t.Fatal(err)
	}
	info, err := b.Stat(ctx, "shared")
	if err != nil || info.Size != 6 {
		t.Fatalf("the other server's Stat = %+v, %v", info, err)
	}
}

// TestFailedPutLeavesNoChunks checks a failed Put leaves no rows at all,
// not only none that List shows.
func TestFailedPutLeavesNoChunks(t *testing.T) {
	url := pgtest.NewDatabase(t)
	s := open(t, url)
	ctx, cancel := context.WithCancel(context.Background())
	r := &cancelAfter{left: 3 * pgblob.ChunkSize, cancel: cancel}
	if _, err := s.Put(ctx, "x", r); err == nil {
		t.Fatal("a Put whose context was cancelled succeeded")
	}
	var n int
	if err := pgtest.Connect(t, url).QueryRow(context.Background(), "SELECT count(*) FROM spool_blob_chunks").Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != 0 {
		t.Errorf("a cancelled Put left %d chunk rows", n)
	}
}
