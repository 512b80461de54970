package assembly_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spool-run/spool"
	"github.com/spool-run/spool/client"
	"github.com/spool-run/spool/internal/assembly"
	"github.com/spool-run/spool/internal/config"
	"github.com/spool-run/spool/internal/testcert"
	"github.com/spool-run/spool/server"
	"github.com/spool-run/spool/spooltest"
	"github.com/spool-run/spool/worker"
)

// TestTLS: with server.tls the server speaks HTTPS (Connect and gRPC); a
// worker and a client that trust the private CA (--ca, SPOOL_CA) run and
// follow a job; one that does not is refused by its own certificate check.
func TestTLS(t *testing.T) {
	t.Parallel()
	files, _ := testcert.New(t)
	caFile, certFile, keyFile := files.CA, files.Cert, files.Key
	srv := start(t, func(c *server.Config) { c.Server.TLS = server.TLS{CertFile: certFile, KeyFile: keyFile} })
	if !strings.HasPrefix(srv.URL, "https://") {
		t.Fatalf("server URL %s", srv.URL)
	}
	spooltest.NewWorker(t, srv, worker.Config{CAFile: caFile})

	for name, grpc := range map[string]bool{"connect": false, "grpc": true} {
		c := srv.Client(client.Config{CAFile: caFile, GRPC: grpc})
		j, _, err := c.Submit(context.Background(), client.SubmitParams{Argv: []string{"echo", "over", "tls"}})
		if err != nil {
			t.Fatalf("%s: submit over TLS: %v", name, err)
		}
		var out []string
		for ev, err := range c.Events(context.Background(), j.ID, client.StreamOptions{Follow: true,
			Types: []spool.EventType{spool.EventOutput}}).All() {
			if err != nil {
				t.Fatalf("%s: follow over TLS: %v", name, err)
			}
			out = append(out, ev.Lines[0].Text)
		}
		if strings.Join(out, "\n") != "over tls" {
			t.Errorf("%s: output %q", name, out)
		}
	}

	_, err := srv.Client().Job(context.Background(), "x")
	if err == nil || !strings.Contains(err.Error(), "certificate") {
		t.Errorf("a client that does not trust the CA: %v, want a certificate error", err)
	}
}

// A certificate that cannot be loaded stops the server at start, naming
// the setting.
func TestTLSBadCertificate(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	files, _ := testcert.New(t)
	certFile := files.Cert
	for name, tc := range map[string]struct {
		tls  config.TLS
		want string
	}{
		"missing key":     {config.TLS{CertFile: certFile, KeyFile: filepath.Join(dir, "nope.pem")}, "server.tls.key_file " + filepath.Join(dir, "nope.pem") + ": no such file"},
		"key is no key":   {config.TLS{CertFile: certFile, KeyFile: certFile}, "are not a certificate and its key"},
		"only half of it": {config.TLS{CertFile: certFile}, "server.tls: set both cert_file and key_file"},
	} {
		t.Run(name, func(t *testing.T) {
			cfg := config.Default()
			cfg.Server.Addr, cfg.Server.DataDir, cfg.Server.TLS = "127.0.0.1:0", t.TempDir(), tc.tls
			err := cfg.Validate()
			if err == nil {
				var srv *assembly.Server
				srv, err = assembly.Start(context.Background(), cfg, assembly.Options{})
				if err == nil {
					_ = srv.Stop(context.Background())
				}
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want %q", err, tc.want)
			}
		})
	}
}
