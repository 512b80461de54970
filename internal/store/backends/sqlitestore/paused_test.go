package sqlitestore

import (
	"context"
	"sync"
	"testing"
	"time"
)

// Pauses and resumes of one queue racing each other leave the paused
// queues in memory as the database has them, whichever commits last.
func TestPausedInMemoryFollowsRacingChanges(t *testing.T) {
	s := openStore(t)
	ctx := context.Background()
	for i := range 100 {
		var wg sync.WaitGroup
		for _, paused := range []bool{true, false} {
			wg.Go(func() {
				if err := s.SetQueuePaused(ctx, "q", paused, time.Now()); err != nil {
					t.Error(err)
				}
			})
		}
		wg.Wait()
		var inDB bool
		if err := s.r.QueryRow(`SELECT EXISTS (SELECT 1 FROM queues WHERE name = 'q' AND paused_at IS NOT NULL)`).Scan(&inDB); err != nil {
			t.Fatal(err)
		}
		if inMemory, _ := s.QueuePaused(ctx, "q"); inMemory != inDB {
			t.Fatalf("round %d: paused in memory %v, in the database %v", i, inMemory, inDB)
		}
	}
}
