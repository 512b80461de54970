package service

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/spool-run/spool/internal/config"
	"github.com/spool-run/spool/internal/cwlogs"
	"github.com/spool-run/spool/internal/ingest"
)

// Scheduled backfills (ingest.backfill) read CloudWatch Logs log groups
// again every so often and add what spool lacks, through the same path as
// a shipper's lines: the store keeps each event id of a source once, so a
// round adds only what a subscription's deliveries missed. Every server
// sharing the store runs the loop; each round is claimed by one of them
// (a spent id per round), so CloudWatch is read once a round, not once a
// server.

// backfills is what the core keeps of the scheduled backfills.
type backfills struct {
	mu sync.Mutex
	// done is, by backfill, the last round this server claimed or saw
	// claimed: a round is tried once per server.
	done map[string]int64
	// apis are the CloudWatch Logs clients, by backfill, made at first use.
	apis map[string]cwlogs.API
}

// RunBackfills runs the due round of every scheduled backfill at now that
// no server has run yet, one after the other, logs what each did, and
// returns when the next round is due (zero: no backfill is configured)
// and the errors of those that failed. A backfill that fails is tried
// again the next round, which reads far enough back (lookback) to cover
// this one's span.
func (s *Service) RunBackfills(ctx context.Context, now time.Time) (time.Time, error) {
	var (
		next time.Time
		errs []error
	)
	for _, name := range slices.Sorted(maps.Keys(s.cfg.Ingest.Backfill)) {
		b := s.cfg.Ingest.Backfill[name]
		every := b.Every()
		round := now.UnixNano() / int64(every)
		if due := time.Unix(0, (round+1)*int64(every)); next.IsZero() || due.Before(next) {
			next = due
		}
		if !s.backfills.claimLocally(name, round) {
			continue
		}
		// The round's id lives as long as the round could still be run
		// by a server that saw it late.
		id := "backfill/" + name + "/" + strconv.FormatInt(round, 10)
		first, err := s.store.SpendOnce(ctx, id, time.Unix(0, (round+2)*int64(every)))
		if err != nil {
			s.backfills.forget(name, round)
			errs = append(errs, fmt.Errorf("backfill %s: claiming its round: %w", name, err))
			continue
		}
		if !first {
			continue
		}
		sum, err := s.backfill(ctx, name, b, now)
		if err != nil {
			errs = append(errs, fmt.Errorf("backfill %s (%d events read, %d added before it failed): %w", name, sum.Read, sum.Added, err))
			continue
		}
		s.log.InfoContext(ctx, "scheduled backfill from CloudWatch Logs", "backfill", name, "log_group", b.LogGroup,
			"read", sum.Read, "added", sum.Added, "streams", len(sum.Streams))
	}
	return next, errors.Join(errs...)
}

// backfill reads b's span before now and stores what spool lacks.
func (s *Service) backfill(ctx context.Context, name string, b config.Backfill, now time.Time) (cwlogs.Summary, error) {
	api, err := s.backfills.api(ctx, name, s.backfillClientConfig(b))
	if err != nil {
		return cwlogs.Summary{}, err
	}
	caller := Caller{Name: "backfill " + name}
	run := cwlogs.Backfill{API: api, Limits: s.ingestLimits(), MaxPostBytes: int(min(s.cfg.Ingest.MaxBodyBytes, cwlogs.DefaultMaxPostBytes)),
		Send: func(ctx context.Context, lines []byte) (cwlogs.Stored, error) {
			evs, err := ingest.DecodeLines(bytes.NewReader(lines), s.ingestLimits())
			if err != nil {
				return cwlogs.Stored{}, err
			}
			sum, err := s.storeEvents(ctx, caller, FormatLines, evs)
			if err != nil {
				return cwlogs.Stored{}, err
			}
			st := cwlogs.Stored{Accepted: sum.Accepted}
			for _, src := range sum.Sources {
				st.Sources = append(st.Sources, cwlogs.SourceStored(src))
			}
			return st, nil
		}}
	return run.Run(ctx, cwlogs.Query{LogGroup: b.LogGroup, LogStream: b.LogStream, Since: now.Add(-b.Lookback()), Until: now})
}

// backfillClientConfig is where b's log group is: its own region, else
// the AWS store's.
func (s *Service) backfillClientConfig(b config.Backfill) cwlogs.Config {
	c := cwlogs.Config{Region: b.Region, Endpoint: b.Endpoint}
	if c.Region == "" {
		c.Region = s.cfg.Store.AWS.Region
	}
	return c
}

// claimLocally reports whether round of name is new to this server, and
// records it.
func (b *backfills) claimLocally(name string, round int64) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.done == nil {
		b.done = map[string]int64{}
	}
	if last, ok := b.done[name]; ok && last >= round {
		return false
	}
	b.done[name] = round
	return true
}

// forget lets round of name be tried again (claiming it failed).
func (b *backfills) forget(name string, round int64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.done[name] == round {
		delete(b.done, name)
	}
}

// api is name's client, made once.
func (b *backfills) api(ctx context.Context, name string, cfg cwlogs.Config) (cwlogs.API, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if api, ok := b.apis[name]; ok {
		return api, nil
	}
	api, err := cwlogs.NewClient(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("%w (the server's: set ingest.backfill.%s.region or store.aws.region)", err, name)
	}
	if b.apis == nil {
		b.apis = map[string]cwlogs.API{}
	}
	b.apis[name] = api
	return api, nil
}
