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
	"github.com/spool-run/spool/internal/credfile"
)

// The key a command sends is the first of: --api-key, $SPOOL_API_KEY, the
// key `spool login` stored for the server in the user's credentials file
// and, for a server on this machine, the admin key that server wrote to
// its data directory on its first start. So a person logs in once per
// server and runs commands from any directory; on the server's machine,
// in its directory, nothing is needed at all; and nothing is guessed.

// credentials are how a command proves who it is to the server.
type credentials struct {
	key string // --api-key
	ca  string // --ca
}

// keySource says where a command found the key it sends.
type keySource struct {
	kind  sourceKind
	where string // how to name it to the person
}

type sourceKind int

const (
	noKey      sourceKind = iota
	givenKey              // --api-key or SPOOL_API_KEY
	storedKey             // spool login's credentials file
	adminKeyAt            // the admin.key of a server on this machine
)

// apiKey returns the key to send and where it came from (kind noKey when
// there is none).
func (e *env) apiKey() (string, keySource) {
	if k := strings.TrimSpace(e.creds.key); k != "" {
		return k, keySource{givenKey, "--api-key"}
	}
	if k := client.APIKeyFromEnv(); k != "" {
		return k, keySource{givenKey, "SPOOL_API_KEY"}
	}
	if entry, path, err := e.storedKey(); err == nil && entry.Key != "" {
		return entry.Key, keySource{storedKey, fmt.Sprintf("the key `spool login` stored for %s in %s", credfile.Server(e.server), path)}
	}
	if !onThisMachine(e.server) {
		return "", keySource{}
	}
	path := adminKeyFile()
	b, err := os.ReadFile(path)
	if err != nil {
		return "", keySource{}
	}
	return strings.TrimSpace(string(b)), keySource{adminKeyAt, path}
}

// storedKey is the key `spool login` stored for the server, if any, and
// the credentials file's path.
func (e *env) storedKey() (credfile.Entry, string, error) {
	path, err := credfile.Path()
	if err != nil {
		return credfile.Entry{}, "", err
	}
	f, err := credfile.Read(path)
	if err != nil {
		return credfile.Entry{}, path, err
	}
	return f.Servers[credfile.Server(e.server)], path, nil
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

// clientConfig is how every command's client reaches the server.
func (e *env) clientConfig() client.Config {
	key, _ := e.apiKey()
	return client.Config{URL: e.server, APIKey: key, CAFile: e.caFile()}
}

// caFile is --ca, or $SPOOL_CA.
func (e *env) caFile() string {
	if e.creds.ca != "" {
		return e.creds.ca
	}
	return strings.TrimSpace(os.Getenv("SPOOL_CA"))
}

// keyHint says, after the server refused the key (or no key was sent),
// where the command looked for it and how to give it one.
func (e *env) keyHint() string {
	server := credfile.Server(e.server)
	login := fmt.Sprintf("`spool login --server %s`", server)
	switch _, src := e.apiKey(); src.kind {
	case givenKey:
		return fmt.Sprintf("the key sent came from %s, which wins over a key stored by %s", src.where, login)
	case storedKey:
		return fmt.Sprintf("the key sent was %s; %s stores another, `spool logout --server %s` forgets it", src.where, login, server)
	case adminKeyAt:
		return fmt.Sprintf("the key sent came from %s; %s stores another for every directory", src.where, login)
	}
	where := "--api-key and SPOOL_API_KEY are empty, "
	switch _, path, err := e.storedKey(); {
	case err != nil:
		where += err.Error()
	default:
		where += fmt.Sprintf("%s holds no key for %s", path, server)
	}
	if onThisMachine(e.server) {
		where += fmt.Sprintf(", and %s cannot be read", adminKeyFile())
	}
	return fmt.Sprintf("no key was sent: %s; log in with %s (it reads the key from stdin), or set SPOOL_API_KEY", where, login)
}
