package storemetrics

import (
	"context"
	"time"

	spoolv1 "github.com/spool-run/spool/gen/spool/v1"
	"github.com/spool-run/spool/internal/events"
	"github.com/spool-run/spool/internal/store"
)

// The capabilities, each measured as an operation of its own.

type finisher struct {
	s *Store
	f store.Finisher
}

func (c finisher) Finish(ctx context.Context, l store.LeaseRef, evs []events.Published, res *spoolv1.JobResult) (*spoolv1.Job, error) {
	t := time.Now()
	j, err := c.f.Finish(ctx, l, evs, res)
	c.s.in.done(ctx, opFinish, t, err)
	return j, err
}

type pausedLeaser struct {
	s *Store
	p store.PausedLeaser
}

func (c pausedLeaser) DequeueUnpaused(ctx context.Context, r store.DequeueRequest) ([]store.Lease, error) {
	t := time.Now()
	ls, err := c.p.DequeueUnpaused(ctx, r)
	c.s.in.done(ctx, opDequeueUnpaused, t, err)
	return ls, err
}

type leaseGracer struct {
	s *Store
	g store.LeaseGracer
}

func (c leaseGracer) GraceLeases(ctx context.Context, until time.Time) (int, error) {
	t := time.Now()
	n, err := c.g.GraceLeases(ctx, until)
	c.s.in.done(ctx, opGraceLeases, t, err)
	return n, err
}

type spaceReclaimer struct {
	s *Store
	r store.SpaceReclaimer
}

func (c spaceReclaimer) ReclaimSpace(ctx context.Context) error {
	t := time.Now()
	err := c.r.ReclaimSpace(ctx)
	c.s.in.done(ctx, opReclaimSpace, t, err)
	return err
}

type pinger struct {
	s *Store
	p store.Pinger
}

func (c pinger) Ping(ctx context.Context) error {
	t := time.Now()
	err := c.p.Ping(ctx)
	c.s.in.done(ctx, opPing, t, err)
	return err
}

type pollerSharer struct {
	s *Store
	p store.PollerSharer
}

func (c pollerSharer) SharePollers(ctx context.Context, polls map[string][]string) error {
	t := time.Now()
	err := c.p.SharePollers(ctx, polls)
	c.s.in.done(ctx, opSharePollers, t, err)
	return err
}

func (c pollerSharer) SharedPollers(ctx context.Context, since time.Time) (map[string][]string, error) {
	t := time.Now()
	polls, err := c.p.SharedPollers(ctx, since)
	c.s.in.done(ctx, opSharedPollers, t, err)
	return polls, err
}
