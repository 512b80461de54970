package client

import (
	"context"

	"connectrpc.com/connect"

	"github.com/spool-run/spool"
	spoolv1 "github.com/spool-run/spool/gen/spool/v1"
)

// NewKey describes an API key to create. Managing keys needs an admin key.
type NewKey struct {
	// Name is unique: letters, digits, '.', '_' and '-'. The audit log
	// names the key's user by it, and revoking a key takes it.
	Name string
	// Role is "admin", "submit", "read", "worker" or "ingest" (spool.Roles).
	Role string
	// Queues limit a worker key to these queues (empty: any).
	Queues []string
}

// CreateKey creates an API key and returns it with its secret. The secret
// is shown this once: the server keeps only its hash.
func (c *Client) CreateKey(ctx context.Context, k NewKey) (key *spoolv1.Key, secret string, err error) {
	role, err := spool.ParseRole(k.Role)
	if err != nil {
		return nil, "", err
	}
	resp, err := c.keys.CreateKey(ctx, connect.NewRequest(&spoolv1.CreateKeyRequest{Name: k.Name, Role: role, Queues: k.Queues}))
	if err != nil {
		return nil, "", wrap(err)
	}
	return resp.Msg.GetKey(), resp.Msg.GetSecret(), nil
}

// Keys lists the API keys, revoked ones included (never their secrets).
func (c *Client) Keys(ctx context.Context) ([]*spoolv1.Key, error) {
	resp, err := c.keys.ListKeys(ctx, connect.NewRequest(&spoolv1.ListKeysRequest{}))
	if err != nil {
		return nil, wrap(err)
	}
	return resp.Msg.GetKeys(), nil
}

// RevokeKey stops the key named name from working, at once, on every
// server sharing the store. It returns the key as revoked.
func (c *Client) RevokeKey(ctx context.Context, name string) (*spoolv1.Key, error) {
	resp, err := c.keys.RevokeKey(ctx, connect.NewRequest(&spoolv1.RevokeKeyRequest{Name: name}))
	if err != nil {
		return nil, wrap(err)
	}
	return resp.Msg.GetKey(), nil
}
