package assembly

import (
	"time"

	"github.com/spool-run/spool/internal/maintenance"
	"github.com/spool-run/spool/internal/service"
	"github.com/spool-run/spool/internal/webhook"
)

// newChores builds the server's background chores over its store and
// core, as the configuration sets them.
func (s *Server) newChores() []maintenance.Service {
	cfg := s.cfg
	return []maintenance.Service{
		maintenance.NewReaper(maintenance.ReaperOptions{Store: s.store, Outage: s.outage, Grace: cfg.Jobs.Lease(), Log: s.log, Meter: s.meter}),
		maintenance.NewScatterDriver(maintenance.ScatterOptions{Store: s.store, Rounds: s.svc.Scatters(), Log: s.log}),
		maintenance.NewIdleSources(maintenance.IdleOptions{Store: s.store, Jobs: s.svc, Queue: cfg.Ingest.Queue, Idle: cfg.Ingest.IdleTimeout(), Log: s.log}),
		maintenance.NewRetention(maintenance.RetentionOptions{Store: s.store, Jobs: s.svc, Reclaimer: s.store.Capabilities().SpaceReclaimer,
			Retention: cfg.Jobs.Retention(), Uploads: s.svc, UploadAge: service.UploadMaxAge, Log: s.log}),
		maintenance.NewPromoter(maintenance.PromoterOptions{Store: s.store, Alarm: s.svc.Promotions(), Log: s.log, Meter: s.meter}),
		maintenance.NewTicker(maintenance.TickerOptions{Ticks: s.svc, Log: s.log}),
		maintenance.NewTicker(maintenance.TickerOptions{Ticks: maintenance.TicksFunc(s.svc.RunBackfills), Log: s.log,
			What: "scheduled backfills from CloudWatch Logs", Longest: 10 * time.Second}),
		maintenance.NewNotifier(maintenance.NotifierOptions{Log: s.log, Deliverer: webhook.New(webhook.Options{Store: s.store,
			Secret: cfg.NotifySecret, BaseURL: cfg.NotifyBaseURL(), Timeout: cfg.Notify.Timeout(),
			AllowPrivate: cfg.Notify.AllowPrivateAddresses, Log: s.log, Meter: s.meter})}),
	}
}

// stopChores stops every chore started, each waiting for its round under
// way.
func (s *Server) stopChores() {
	for _, c := range s.chores {
		c.Stop()
	}
}
