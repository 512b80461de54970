package main

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/spool-run/spool"
	"github.com/spool-run/spool/client"
)

// latency is a distribution's p50 and p99, and the job measured.
type latency struct {
	p50, p99 time.Duration
	jobID    string
}

func (l latency) String() string {
	return fmt.Sprintf("%s / %s", round(l.p50), round(l.p99))
}

func round(d time.Duration) time.Duration {
	if d < 10*time.Millisecond {
		return d.Round(10 * time.Microsecond)
	}
	return d.Round(time.Millisecond)
}

// liveLatency runs a job (submitted through submit) writing count lines at
// rate lines/s while a client (follow) follows it, and measures, for each
// line, the time from the process writing it to the follower receiving it.
func liveLatency(ctx context.Context, submit, follow *client.Client, prog emitter, rate, count int) (latency, error) {
	job, _, err := submit.Submit(ctx, client.SubmitParams{Argv: prog.paced(count, rate, "500ms")})
	if err != nil {
		return latency{}, err
	}
	s := follow.Events(ctx, job.ID, client.StreamOptions{Follow: true, Types: []spool.EventType{spool.EventOutput}})
	var samples []time.Duration
	for ev, err := range s.All() {
		if err != nil {
			return latency{}, err
		}
		now := time.Now()
		line := ev.Lines[0].Text
		_, ts, ok := strings.Cut(line, " ")
		if !ok {
			return latency{}, fmt.Errorf("unexpected line %q", line)
		}
		ns, err := strconv.ParseInt(ts, 10, 64)
		if err != nil {
			return latency{}, fmt.Errorf("unexpected line %q", line)
		}
		samples = append(samples, now.Sub(time.Unix(0, ns)))
	}
	if len(samples) != count {
		return latency{}, fmt.Errorf("followed %d lines of %d", len(samples), count)
	}
	p50, p99 := percentiles(samples)
	return latency{p50: p50, p99: p99, jobID: job.ID}, nil
}
