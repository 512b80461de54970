package cli

import (
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strings"

	"github.com/spool-run/spool/client"
	"github.com/spool-run/spool/internal/config"
)

// The key a command sends is the first of: --api-key, $SPOOL_API_KEY and,
// for a server on this machine, the admin key that server wrote to its data
// directory on its first start. So on the server's machine nothing needs to
// be copied, and elsewhere nothing is guessed.

// credentials are how a command proves who it is to the server.
type credentials struct {
	key string // --api-key
	ca  string // --ca
}

// apiKey returns the key to send and where it came from ("" and "" when
// there is none).
func (e *env) apiKey() (key, from string) {
	if k := strings.TrimSpace(e.creds.key); k != "" {
		return k, "--api-key"
	}
	if k := client.APIKeyFromEnv(); k != "" {
		return k, "SPOOL_API_KEY"
	}
	if !onThisMachine(e.server) {
		return "", ""
	}
	path := adminKeyFile()
	b, err := os.ReadFile(path)
	if err != nil {
		return "", ""
	}
	return strings.TrimSpace(string(b)), path
}

// adminKeyFile is where a server started here with the default data
// directory (or $SPOOL_SERVER_DATA_DIR) keeps its first admin key.
func adminKeyFile() string {
	dir := os.Getenv(config.EnvName("server", "data_dir"))
	if dir == "" {
		dir = config.Default().Server.DataDir
	}
	return filepath.Join(dir, "admin.key")
}

// onThisMachine reports whether the server address is a loopback one.
func onThisMachine(server string) bool {
	u, err := url.Parse(server)
	if err != nil {
		return false
	}
	h := u.Hostname()
	if h == "localhost" || strings.HasSuffix(h, ".localhost") {
		return true
	}
	ip := net.ParseIP(h)
	return ip != nil && ip.IsLoopback()
}

// clientOptions are the options every command's client and worker use.
func (e *env) clientOptions() []client.Option {
	key, _ := e.apiKey()
	return []client.Option{client.WithAPIKey(key), client.WithCA(e.caFile())}
}

// caFile is --ca, or $SPOOL_CA.
func (e *env) caFile() string {
	if e.creds.ca != "" {
		return e.creds.ca
	}
	return strings.TrimSpace(os.Getenv("SPOOL_CA"))
}

// keyHint says, after the server refused the key, where the command looked
// for it.
func (e *env) keyHint() string {
	if _, from := e.apiKey(); from != "" {
		return fmt.Sprintf("the key sent came from %s", from)
	}
	where := "--api-key and SPOOL_API_KEY are empty"
	if onThisMachine(e.server) {
		where += fmt.Sprintf(", and %s cannot be read", adminKeyFile())
	}
	return "no key was sent: " + where
}
