package e2e

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/spool-run/spool"
	"github.com/spool-run/spool/client"
	"github.com/spool-run/spool/internal/store/backends/pgstore/pgtest"
)

// TestLiveAcrossReplicasOnAWS: a worker on replica A prints 10 lines a
// second; a follower on replica B receives each soon after its print. Before followers and new output crossed AWS replicas by
// themselves, a line took 0.6 to 2.3 s to reach B. The measured figures
// are logged (run with -v to read them).
func TestLiveAcrossReplicasOnAWS(t *testing.T) {
	t.Parallel()
	testLiveAcrossServers(t, "AWS", awsStore(t))
}

// TestLiveAcrossServersOnPostgres: the same on two servers of one
// PostgreSQL database, for comparison.
func TestLiveAcrossServersOnPostgres(t *testing.T) {
	t.Parallel()
	testLiveAcrossServers(t, "PostgreSQL", configArgs(t, postgresConfig(pgtest.NewDatabase(t))))
}

// What a line may take from print to a follower on another server than
// the worker's. The goal is a p99 of 150 ms, which these bounds do not
// check: under the whole suite (two packages at once, the race detector,
// the AWS test servers busy with other tests) the p50 alone has reached
// 725 ms and the p99 1.4 s, the same on the worker's own server. They
// still fail the old way of crossing AWS replicas: the worker, not told of
// the follower, flushed at its flush interval (a minute here) or when 50
// lines had waited, so half the lines waited 2.5 s or more and the first
// of each batch about 5 s.
const (
	liveP50Bound = 1500 * time.Millisecond
	liveP99Bound = 4 * time.Second
)

// testLiveAcrossServers measures the time from a line's print, by a job
// its worker runs through server A, to a follower on server B, at 10 lines
// a second, on store (server arguments; name for the log), and fails when
// it is over the bounds. The flush interval is a minute: only a follower
// whose presence reaches the worker across servers makes it flush at once.
// Then, for comparison on the same machine at the same time, a second
// such job is followed on server A.
func testLiveAcrossServers(t *testing.T, name string, store []string) {
	const lines = 100
	env := []string{"SPOOL_EXECUTION_BATCHING_FLUSH_INTERVAL_SECONDS=60"}
	_, a := startServerEnv(t, freePort(t), t.TempDir(), env, store...)
	_, b := startServerEnv(t, freePort(t), t.TempDir(), env, store...)
	startWorker(t, "worker", a.URL(), t.TempDir())

	// Each line carries its print time; the first comes a second after the
	// start, by when the follower is in place.
	script := fmt.Sprintf(`sleep 1; i=1; while [ $i -le %d ]; do echo "$i $(date +%%s%%N)"; sleep 0.1; i=$((i+1)); done`, lines)
	followed := func(c *client.Client) spread {
		job, _, err := a.Submit(context.Background(), client.SubmitParams{Script: script})
		if err != nil {
			t.Fatal(err)
		}
		return percentiles(follow(t, c, job.ID, lines))
	}
	other := followed(b)
	same := followed(a)
	t.Logf("%s, print to follower, %d lines at 10/s: on another server than the worker's %s; on the worker's %s", name, lines, other, same)
	if other.p50 > liveP50Bound || other.p99 > liveP99Bound {
		t.Fatalf("%s on the other server, want a p50 within %v and a p99 within %v", other, liveP50Bound, liveP99Bound)
	}
}

// follow follows job on c to its end, and returns how long each of its
// lines took from its print (the number after its first space) to here.
func follow(t *testing.T, c *client.Client, job string, lines int) []time.Duration {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s := c.Events(ctx, job, client.StreamOptions{Follow: true, Types: []spool.EventType{spool.EventOutput}})
	var took []time.Duration
	for ev, err := range s.All() {
		if err != nil {
			t.Errorf("following on %s: %v", c.URL(), err)
			return nil
		}
		now := time.Now()
		for _, l := range ev.Lines {
			_, stamp, _ := strings.Cut(l.Text, " ")
			ns, err := strconv.ParseInt(stamp, 10, 64)
			if err != nil {
				t.Errorf("line %q carries no print time", l.Text)
				return nil
			}
			took = append(took, now.Sub(time.Unix(0, ns)))
		}
	}
	if done := s.Finished(); done == nil || done.State != spool.Succeeded {
		t.Errorf("the stream on %s ended with %v", c.URL(), done)
	}
	if len(took) != lines {
		t.Errorf("%s saw %d lines, want %d", c.URL(), len(took), lines)
	}
	return took
}

// spread is a distribution's p50, p99 and maximum.
type spread struct{ p50, p99, max time.Duration }

func (s spread) String() string {
	r := func(d time.Duration) time.Duration { return d.Round(time.Millisecond) }
	return fmt.Sprintf("p50 %v, p99 %v (max %v)", r(s.p50), r(s.p99), r(s.max))
}

func percentiles(took []time.Duration) spread {
	if len(took) == 0 {
		return spread{}
	}
	s := slices.Sorted(slices.Values(took))
	return spread{p50: s[len(s)/2], p99: s[(len(s)*99+99)/100-1], max: s[len(s)-1]}
}
