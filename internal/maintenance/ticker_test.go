package maintenance_test

import (
	"testing"
	"time"

	spoolv1 "github.com/spool-run/spool/gen/spool/v1"
	"github.com/spool-run/spool/internal/config"
	"github.com/spool-run/spool/internal/maintenance"
	"github.com/spool-run/spool/internal/service"
	"github.com/spool-run/spool/internal/store"
	"github.com/spool-run/spool/internal/token"
)

// Three servers' tickers on one store, each ticking on its own, make one
// job per tick of a schedule that ticks every second.
func TestTickersShareTicks(t *testing.T) {
	c := newCore(t)
	tickers := []*maintenance.Ticker{maintenance.NewTicker(maintenance.TickerOptions{Ticks: c.svc})}
	for range 2 {
		cfg := config.Default()
		cfg.Auth.Disabled = true
		signer, err := token.NewSigner(make([]byte, 32))
		if err != nil {
			t.Fatal(err)
		}
		other := service.New(service.Options{Store: c.st, Config: cfg, Signer: signer})
		tickers = append(tickers, maintenance.NewTicker(maintenance.TickerOptions{Ticks: other}))
	}
	_, err := c.svc.CreateSchedule(c.ctx, &spoolv1.CreateScheduleRequest{Schedule: &spoolv1.Schedule{Name: "each-second", Cron: "* * * * * *",
		Job: &spoolv1.EnqueueJobRequest{Queue: "ticks", Params: &spoolv1.JobParams{Argv: []string{"date"}}}}})
	if err != nil {
		t.Fatal(err)
	}
	for _, tk := range tickers {
		if err := tk.Start(t.Context()); err != nil {
			t.Fatal(err)
		}
	}
	var jobs []*spoolv1.Job
	for len(jobs) < 3 {
		time.Sleep(50 * time.Millisecond)
		if jobs, _, err = c.st.List(c.ctx, store.ListFilter{Queue: "ticks", Limit: 100}); err != nil {
			t.Fatal(err)
		}
	}
	for _, tk := range tickers {
		tk.Stop()
	}
	if jobs, _, err = c.st.List(c.ctx, store.ListFilter{Queue: "ticks", Limit: 100}); err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, j := range jobs {
		if seen[j.GetRequestId()] {
			t.Errorf("two jobs of tick %s", j.GetRequestId())
		}
		seen[j.GetRequestId()] = true
	}
	sc, err := c.st.GetSchedule(c.ctx, "each-second")
	if err != nil {
		t.Fatal(err)
	}
	// One job for each second from the schedule's creation to its last
	// tick.
	want := int(sc.GetLastTickAt().AsTime().Sub(sc.GetCreatedAt().AsTime().Truncate(time.Second)) / time.Second)
	if len(jobs) != want {
		t.Errorf("%d jobs for %d ticks (created %v, last tick %v)", len(jobs), want, sc.GetCreatedAt().AsTime(), sc.GetLastTickAt().AsTime())
	}
}
