package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/spool-run/spool/client"
	"github.com/spool-run/spool/internal/credfile"
	"github.com/spool-run/spool/internal/httpapi"
	"github.com/spool-run/spool/internal/wire"
)

func newLoginCmd(e *env) *cobra.Command {
	return &cobra.Command{
		Use:   "login",
		Short: "Store an API key for a server, for every spool command you run",
		Long: `Store an API key for the server (--server, or SPOOL_SERVER), so that every
spool command you run, from any directory, sends it to that server.

The key is read from standard input, or asked for without echo at a
terminal, or taken from --api-key (which other users can see in ps). It is
checked with the server before it is stored, in your configuration
directory ($XDG_CONFIG_HOME/spool/credentials.json, readable by you only),
one key per server. --api-key and SPOOL_API_KEY, when set, still win over
it. spool logout removes it.

  spool login --server http://127.0.0.1:7070 < spool-data/admin.key
  spool login --server https://spool.example.com     # asks for the key`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runLogin(cmd.Context(), e) },
	}
}

func newLogoutCmd(e *env) *cobra.Command {
	return &cobra.Command{
		Use:   "logout",
		Short: "Remove the API key spool login stored for a server",
		Long: `Remove the API key spool login stored for the server (--server, or
SPOOL_SERVER) from your credentials file. The key itself keeps working
elsewhere until an admin revokes it (spool keys revoke NAME).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runLogout(e) },
	}
}

// maxKeyInput bounds what login reads from stdin: a key is 50 bytes.
const maxKeyInput = 4 << 10

// runLogin checks the key it is given with the server and stores it;
// it has no flags of its own.
func runLogin(ctx context.Context, e *env) error {
	if _, err := wire.BaseURL(e.server); err != nil {
		return err
	}
	server := credfile.Server(e.server)
	key, err := e.keyToStore(server)
	if err != nil {
		return err
	}
	who, err := whoami(ctx, e, key)
	if err != nil {
		return err
	}
	path, err := credfile.Path()
	if err != nil {
		return fmt.Errorf("cannot find your configuration directory to store the key in: %w", err)
	}
	f, err := credfile.Read(path)
	if err != nil {
		return err
	}
	f.Servers[server] = credfile.Entry{Key: key, Name: who.Name, Role: who.Role}
	if err := credfile.Write(path, f); err != nil {
		return fmt.Errorf("store the key in %s: %w", path, err)
	}
	fmt.Fprintf(e.out, "logged in to %s as %q (%s); the key is stored in %s\n", server, who.Name, who.Role, path)
	if client.APIKeyFromEnv() != "" {
		fmt.Fprintln(e.errOut, "spool: SPOOL_API_KEY is set, and it wins over the stored key: unset it to use this one")
	}
	return nil
}

// keyToStore is the key login was given: --api-key, or what stdin holds,
// or, at a terminal, what the person types (not echoed).
func (e *env) keyToStore(server string) (string, error) {
	if k := strings.TrimSpace(e.creds.key); k != "" {
		return k, nil
	}
	if f, ok := e.in.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		fmt.Fprintf(e.errOut, "API key for %s: ", server)
		b, err := term.ReadPassword(int(f.Fd()))
		fmt.Fprintln(e.errOut)
		if err != nil {
			return "", fmt.Errorf("read the key: %w", err)
		}
		return oneKey(string(b))
	}
	b, err := io.ReadAll(io.LimitReader(e.in, maxKeyInput+1))
	if err != nil {
		return "", fmt.Errorf("read the key from stdin: %w", err)
	}
	if len(b) > maxKeyInput {
		return "", fmt.Errorf("stdin holds more than %d bytes: give the API key alone (spool login < spool-data/admin.key)", maxKeyInput)
	}
	return oneKey(string(b))
}

// oneKey is the key in s, which must hold exactly one word.
func oneKey(s string) (string, error) {
	switch words := strings.Fields(s); len(words) {
	case 0:
		return "", errors.New("no API key was given: pipe it in (spool login < spool-data/admin.key), type it at the prompt, or give --api-key")
	case 1:
		return words[0], nil
	}
	return "", errors.New("the input holds more than one word: give the API key alone")
}

// whoami asks the server who key is (GET /api/v1/session), which any valid
// key may: the check before a key is stored.
func whoami(ctx context.Context, e *env, key string) (httpapi.Session, error) {
	var who httpapi.Session
	hc, err := wire.HTTPClient(wire.Options{CAFile: e.caFile()})
	if err != nil {
		return who, err
	}
	base, err := wire.BaseURL(e.server)
	if err != nil {
		return who, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/api/v1/session", nil)
	if err != nil {
		return who, err
	}
	req.Header.Set("Authorization", "Bearer "+key)
	resp, err := hc.Do(req)
	if err != nil {
		return who, fmt.Errorf("cannot reach the spool server at %s (%v): start one with `spool server`, or point --server or SPOOL_SERVER at yours", base, err)
	}
	defer resp.Body.Close()
	var body struct {
		httpapi.Session
		Error string `json:"error"`
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, 64<<10)).Decode(&body); err != nil {
		return who, fmt.Errorf("the server at %s answered %s, not as a spool server does: is --server right?", base, resp.Status)
	}
	switch {
	case resp.StatusCode == http.StatusUnauthorized:
		return who, fmt.Errorf("the server at %s refused this key: %s; nothing was stored", base, body.Error)
	case resp.StatusCode != http.StatusOK:
		return who, fmt.Errorf("the server at %s answered %s: %s; nothing was stored", base, resp.Status, body.Error)
	case body.AuthDisabled:
		return who, fmt.Errorf("the server at %s lets everyone in (auth.disabled): there is no key to store", base)
	}
	return body.Session, nil
}

// runLogout removes the stored key; it has no flags of its own.
func runLogout(e *env) error {
	if _, err := wire.BaseURL(e.server); err != nil {
		return err
	}
	server := credfile.Server(e.server)
	path, err := credfile.Path()
	if err != nil {
		return fmt.Errorf("cannot find your configuration directory: %w", err)
	}
	f, err := credfile.Read(path)
	if err != nil {
		return err
	}
	if _, ok := f.Servers[server]; !ok {
		fmt.Fprintf(e.out, "no key was stored for %s in %s\n", server, path)
		return nil
	}
	delete(f.Servers, server)
	if err := credfile.Write(path, f); err != nil {
		return fmt.Errorf("remove the key from %s: %w", path, err)
	}
	fmt.Fprintf(e.out, "logged out of %s: its key is removed from %s\n", server, path)
	return nil
}
