package client

import (
	"context"

	"connectrpc.com/connect"

	"github.com/spool-run/spool"
	spoolv1 "github.com/spool-run/spool/gen/spool/v1"
	"github.com/spool-run/spool/internal/convert"
)

// KeyParams describes an API key to create. Managing keys needs an admin key.
type KeyParams struct {
	// Name is unique: letters, digits, '.', '_' and '-'. The audit log
	// names the key's user by it, and revoking a key takes it.
	Name string
	// Role is what the key may do.
	Role spool.Role
	// Queues limit a worker key to these queues (empty: any).
	Queues []string
}

// CreateKey creates an API key and returns it with its secret. The secret
// is shown this once: the server keeps only its hash.
func (c *Client) CreateKey(ctx context.Context, k KeyParams) (key *spool.Key, secret string, err error) {
	resp, err := c.keys.CreateKey(ctx, connect.NewRequest(&spoolv1.CreateKeyRequest{Name: k.Name, Role: convert.RoleProto(k.Role), Queues: k.Queues}))
	if err != nil {
		return nil, "", wrap(err)
	}
	return convert.Key(resp.Msg.GetKey()), resp.Msg.GetSecret(), nil
}

// Keys lists the API keys, revoked ones included (never their secrets).
func (c *Client) Keys(ctx context.Context) ([]*spool.Key, error) {
	resp, err := c.keys.ListKeys(ctx, connect.NewRequest(&spoolv1.ListKeysRequest{}))
	if err != nil {
		return nil, wrap(err)
	}
	keys := make([]*spool.Key, len(resp.Msg.GetKeys()))
	for i, k := range resp.Msg.GetKeys() {
		keys[i] = convert.Key(k)
	}
	return keys, nil
}

// RevokeKey stops the key named name from working, at once, on every
// server sharing the store. It returns the key as revoked.
func (c *Client) RevokeKey(ctx context.Context, name string) (*spool.Key, error) {
	resp, err := c.keys.RevokeKey(ctx, connect.NewRequest(&spoolv1.RevokeKeyRequest{Name: name}))
	if err != nil {
		return nil, wrap(err)
	}
	return convert.Key(resp.Msg.GetKey()), nil
}
