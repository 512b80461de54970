package service

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/spool-run/spool/internal/config"
	"github.com/spool-run/spool/internal/seal"
	"github.com/spool-run/spool/internal/store/backends/memstore"
	"github.com/spool-run/spool/internal/telemetry"
	"github.com/spool-run/spool/internal/token"
)

// TestQueueGauge: /metrics shows each queue's jobs queued and running, as
// the store counts them.
func TestQueueGauge(t *testing.T) {
	cfg := config.Default()
	cfg.Auth.Disabled = true
	key := make([]byte, 32)
	signer, err := token.NewSigner(key)
	if err != nil {
		t.Fatal(err)
	}
	sealer, err := seal.New(key)
	if err != nil {
		t.Fatal(err)
	}
	m := telemetry.Must(telemetry.New())
	o := &operator{st: memstore.New(), ctx: WithCredentials(context.Background(), Credentials{Host: "localhost"})}
	o.s = New(Options{Store: o.st, Config: cfg, Signer: signer, Sealer: sealer, Meter: m.Meter("test")})
	for range 3 {
		o.enqueue(t, "builds")
	}
	if leases := o.dequeue(t, "builds", 0); len(leases) != 1 {
		t.Fatalf("leased %d jobs", len(leases))
	}
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	for _, want := range []string{
		`spool_queue_jobs{queue="builds",state="queued"} 2`,
		`spool_queue_jobs{queue="builds",state="running"} 1`,
	} {
		if !strings.Contains(rec.Body.String(), want) {
			t.Errorf("/metrics lacks %s:\n%s", want, rec.Body.String())
		}
	}
}
