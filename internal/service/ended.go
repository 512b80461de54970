package service

import (
	"context"
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	spoolv1 "github.com/spool-run/spool/gen/spool/v1"
)

// EndedMinutes is how many minutes ListQueues's ended_per_minute covers:
// the last hour, the minute under way the last of them.
const EndedMinutes = 60

// addEndedPerMinute gives each queue of byName with a job ended in the last
// EndedMinutes minutes its counts for every one of them, oldest first, so a
// chart draws a bar per minute without filling gaps or knowing the
// server's clock. A queue the store counts but byName lacks is left out,
// as ListQueues would not list it.
func (s *Service) addEndedPerMinute(ctx context.Context, now time.Time, byName map[string]*spoolv1.Queue) error {
	first := now.Truncate(time.Minute).Add(-(EndedMinutes - 1) * time.Minute)
	minutes, err := s.store.EndedPerMinute(ctx, first)
	if err != nil {
		return s.fail(ctx, "ListQueues", err)
	}
	for _, m := range minutes {
		q := byName[m.Queue]
		i := int(m.Minute.Sub(first) / time.Minute)
		if q == nil || i < 0 || i >= EndedMinutes {
			continue // not listed, or a minute past now (another server's clock ahead of this one)
		}
		if q.EndedPerMinute == nil {
			q.EndedPerMinute = make([]*spoolv1.EndedMinute, EndedMinutes)
			for j := range q.EndedPerMinute {
				q.EndedPerMinute[j] = &spoolv1.EndedMinute{Minute: timestamppb.New(first.Add(time.Duration(j) * time.Minute))}
			}
		}
		e := q.EndedPerMinute[i]
		e.Succeeded, e.Failed, e.Cancelled = m.Succeeded, m.Failed, m.Cancelled
	}
	return nil
}
