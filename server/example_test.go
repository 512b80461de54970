package server_test

import (
	"context"
	"fmt"
	"log"
	"net/http"
	"os"
	"path/filepath"

	"github.com/spool-run/spool/client"
	"github.com/spool-run/spool/server"
)

// Run a spool server inside a program, on any free loopback port.
func ExampleStart() {
	dir, err := os.MkdirTemp("", "spool-example-*")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)

	cfg := server.DefaultConfig() // or server.LoadConfig("spool.yaml")
	cfg.Server.Addr = "127.0.0.1:0"
	cfg.Server.DataDir = dir
	srv, err := server.Start(context.Background(), cfg)
	if err != nil {
		log.Fatal(err)
	}
	defer srv.Stop(context.Background())

	resp, err := http.Get(srv.URL() + "/healthz") // needs no key
	if err != nil {
		log.Fatal(err)
	}
	resp.Body.Close()
	fmt.Println(resp.Status)

	// Everything else does. On its first start the server wrote an admin
	// key to its data directory (or set cfg.Auth.AdminKey).
	key, err := os.ReadFile(filepath.Join(dir, "admin.key"))
	if err != nil {
		log.Fatal(err)
	}
	c, err := client.New(client.Config{URL: srv.URL(), APIKey: string(key)})
	if err != nil {
		log.Fatal(err)
	}
	keys, err := c.Keys(context.Background())
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(keys[0].Name, keys[0].Role.String())
	// Output:
	// 200 OK
	// admin admin
}

// Read a configuration file: its settings, in whole seconds, hours and
// days, become durations.
func ExampleLoadConfig() {
	dir, err := os.MkdirTemp("", "spool-example-*")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "spool.yaml")
	yaml := "jobs:\n  lease_seconds: 90\n  retention_days: 7\nauth:\n  session_hours: 8\n"
	if err := os.WriteFile(path, []byte(yaml), 0o600); err != nil {
		log.Fatal(err)
	}

	cfg, err := server.LoadConfig(path) // and the SPOOL_* variables
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(cfg.Jobs.Lease, cfg.Jobs.Retention, cfg.Auth.SessionLength)
	fmt.Println(cfg.Execution.HeartbeatInterval) // not in the file: the default
	// Output:
	// 1m30s 168h0m0s 8h0m0s
	// 30s
}
