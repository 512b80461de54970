package service

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/spool-run/spool"
	spoolv1 "github.com/spool-run/spool/gen/spool/v1"
	"github.com/spool-run/spool/internal/convert"
	"github.com/spool-run/spool/internal/datadir"
	"github.com/spool-run/spool/internal/store"
	"github.com/spool-run/spool/internal/store/storekit"
	"github.com/spool-run/spool/internal/token"
)

// AdminKeyFile is where a server writes the admin key it generates on its
// first start, in its data directory.
const AdminKeyFile = datadir.AdminKey

// queueLimited are the roles a key may have and still be limited to some
// queues. An admin key can make any key, so a limit would not hold it; an
// ingest key sends to sources, not to queues.
var queueLimited = map[spoolv1.KeyRole]bool{
	spoolv1.KeyRole_KEY_ROLE_WORKER: true,
	spoolv1.KeyRole_KEY_ROLE_SUBMIT: true,
	spoolv1.KeyRole_KEY_ROLE_READ:   true,
}

// CreateKey makes a new API key and returns its secret, once.
func (s *Service) CreateKey(ctx context.Context, m *spoolv1.CreateKeyRequest) (*spoolv1.CreateKeyResponse, error) {
	caller, err := s.authorize(ctx, PermAdmin, "")
	if err != nil {
		return nil, err
	}
	if err := checkKeyName(m.GetName()); err != nil {
		return nil, err
	}
	if _, ok := roles[m.GetRole()]; !ok {
		names := make([]string, len(spool.Roles()))
		for i, r := range spool.Roles() {
			names[i] = r.String()
		}
		return nil, invalid("role: say what the key may do: %s", strings.Join(names, ", "))
	}
	if len(m.GetQueues()) > 0 && !queueLimited[m.GetRole()] {
		return nil, invalid("queues limit worker, submit and read keys; a %s key works on every queue", convert.Role(m.GetRole()).String())
	}
	for _, q := range m.GetQueues() {
		if _, err := checkQueue(q); err != nil || q == "" {
			return nil, invalid("queues: %q is not a queue name", q)
		}
	}
	key := &spoolv1.Key{Name: m.GetName(), Role: m.GetRole(), Queues: m.GetQueues(), CreatedAt: timestamppb.New(storekit.Now())}
	secret := NewSecret()
	if err := s.store.CreateKey(ctx, store.KeyRecord{Key: key, Hash: HashKey(secret)}); err != nil {
		return nil, s.fail(ctx, "CreateKey", err)
	}
	s.audit(ctx, caller, "key created", "key", key.GetName(), "role", convert.Role(key.GetRole()).String(), "queues", strings.Join(key.GetQueues(), ","))
	return &spoolv1.CreateKeyResponse{Key: key, Secret: secret}, nil
}

// ListKeys lists the keys, never their secrets.
func (s *Service) ListKeys(ctx context.Context, _ *spoolv1.ListKeysRequest) (*spoolv1.ListKeysResponse, error) {
	if _, err := s.authorize(ctx, PermAdmin, ""); err != nil {
		return nil, err
	}
	keys, err := s.store.ListKeys(ctx)
	if err != nil {
		return nil, s.fail(ctx, "ListKeys", err)
	}
	return &spoolv1.ListKeysResponse{Keys: keys}, nil
}

// RevokeKey stops a key from working.
func (s *Service) RevokeKey(ctx context.Context, m *spoolv1.RevokeKeyRequest) (*spoolv1.RevokeKeyResponse, error) {
	caller, err := s.authorize(ctx, PermAdmin, "")
	if err != nil {
		return nil, err
	}
	if err := checkKeyName(m.GetName()); err != nil {
		return nil, err
	}
	key, err := s.store.RevokeKey(ctx, m.GetName(), storekit.Now())
	// Dropped whatever the store answered: a revoke that failed on its
	// way back may still have been made.
	s.keyCache.forget()
	if err != nil {
		return nil, s.fail(ctx, "RevokeKey", err)
	}
	s.audit(ctx, caller, "key revoked", "key", key.GetName())
	return &spoolv1.RevokeKeyResponse{Key: key}, nil
}

func checkKeyName(name string) error {
	if name == "" || len(name) > maxQueueName || !queueName.MatchString(name) {
		return invalid("key name %q: use 1-%d letters, digits, '.', '_' or '-'", truncate(name, 40), maxQueueName)
	}
	return nil
}

// Login checks an API key for the web UI and returns the session cookie's
// value that stands for it until expires. The key itself never goes into
// a cookie or a URL.
func (s *Service) Login(ctx context.Context, key string) (session string, expires time.Time, err error) {
	if s.cfg.Auth.Disabled {
		return "", time.Time{}, invalid("auth is disabled on this server: there is nothing to log in to")
	}
	cr := credentialsFrom(ctx)
	cr.Key, cr.Session = strings.TrimSpace(key), ""
	caller, err := s.authorize(WithCredentials(ctx, cr), PermRead, "")
	if err != nil {
		return "", time.Time{}, err
	}
	session, expires = s.sessionFor(caller.hash)
	s.log.InfoContext(ctx, "logged in to the web UI", "key", caller.Name)
	return session, expires, nil
}

// Logout ends the login the request's session cookie stands for, on every
// server sharing the store: the cookie, even copied before, is refused
// from now on. A request without a valid session has nothing to end.
func (s *Service) Logout(ctx context.Context) error {
	cr := credentialsFrom(ctx)
	if s.cfg.Auth.Disabled || cr.Session == "" {
		return nil
	}
	ss, err := s.signer.VerifySession(cr.Session)
	if err != nil || time.Now().Unix() > ss.Expires {
		return nil
	}
	if err := s.endSession(ctx, ss); err != nil {
		return s.fail(ctx, "Logout", err)
	}
	s.log.InfoContext(ctx, "logged out of the web UI")
	return nil
}

// TicketLifetime is how long a WebSocket ticket may wait for its use.
const TicketLifetime = time.Minute

// Ticket returns a stand-in for the caller's key for a browser's
// WebSocket, which cannot send headers: passed as ?ticket=, it is all a URL
// ever carries, and it opens the log stream of jobID, to read, once, within
// TicketLifetime, on any server sharing the store. Anything else done with
// it is refused.
func (s *Service) Ticket(ctx context.Context, jobID string) (ticket string, expires time.Time, err error) {
	caller, err := s.authorize(ctx, PermRead, "")
	if err != nil {
		return "", time.Time{}, err
	}
	if s.cfg.Auth.Disabled {
		return "", time.Time{}, invalid("auth is disabled on this server: a WebSocket needs no ticket")
	}
	if jobID == "" {
		return "", time.Time{}, invalid("job_id: name the job whose log stream the ticket is for (a ticket opens one job's stream, once)")
	}
	job, err := s.job(ctx, "Ticket", jobID)
	if err != nil {
		return "", time.Time{}, err
	}
	expires = time.Now().Add(TicketLifetime)
	return s.signer.SignTicket(token.Ticket{KeyHash: caller.hash, JobID: job.GetJobId(), ID: newTokenID(), Expires: expires.Unix()}), expires, nil
}

// Whoami returns the caller a request comes from (for the web UI, to show
// who is logged in).
func (s *Service) Whoami(ctx context.Context) (Caller, error) {
	return s.authorize(ctx, PermRead, "")
}

// AuthDisabled reports whether every request is let in.
func (s *Service) AuthDisabled() bool { return s.cfg.Auth.Disabled }

// audit logs a change made with a key, naming the key.
func (s *Service) audit(ctx context.Context, c Caller, what string, args ...any) {
	s.log.InfoContext(ctx, what, append([]any{"audit", true, "by_key", c.Name}, args...)...)
}

// Bootstrap makes sure an admin can get in: with auth.admin_key set, that
// key exists (as "admin"); otherwise, when the store has no keys at all, an
// admin key is generated and written to the data directory's admin.key
// (mode 0600). It returns the file's path when it wrote one.
func (s *Service) Bootstrap(ctx context.Context) (written string, err error) {
	if s.cfg.Auth.Disabled {
		return "", nil
	}
	admin := func(secret string) error {
		key := &spoolv1.Key{Name: "admin", Role: spoolv1.KeyRole_KEY_ROLE_ADMIN, CreatedAt: timestamppb.New(storekit.Now())}
		return s.store.CreateKey(ctx, store.KeyRecord{Key: key, Hash: HashKey(secret)})
	}
	if secret := s.cfg.Auth.AdminKey; secret != "" {
		if _, err := s.store.KeyByHash(ctx, HashKey(secret)); !errors.Is(err, spool.ErrNotFound) {
			return "", err
		}
		err := admin(secret)
		if errors.Is(err, spool.ErrAlreadyExists) {
			// Another server sharing the store may have made it just now.
			if _, err := s.store.KeyByHash(ctx, HashKey(secret)); err == nil {
				return "", nil
			}
			return "", fmt.Errorf("auth.admin_key: a key named \"admin\" exists with another secret; revoke it (spool keys revoke admin) or leave auth.admin_key unset")
		}
		return "", err
	}
	keys, err := s.store.ListKeys(ctx)
	if err != nil || len(keys) > 0 {
		return "", err
	}
	// The file is written before the key exists, so that a key is never
	// made that nobody can read.
	secret := NewSecret()
	path := filepath.Join(s.cfg.Server.DataDir, AdminKeyFile)
	if err := writeSecret(path, secret); err != nil {
		return "", fmt.Errorf("write the admin key: %w", err)
	}
	if err := admin(secret); err != nil {
		_ = os.Remove(path)
		if errors.Is(err, spool.ErrAlreadyExists) {
			return "", nil // another server sharing the store made it first
		}
		return "", err
	}
	return path, nil
}

// writeSecret writes secret to path, readable by its owner only, in one
// step: a reader never sees half a key.
func writeSecret(path, secret string) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	f, err := os.CreateTemp(filepath.Dir(path), ".admin-key-*")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name())
	if _, err := f.WriteString(secret + "\n"); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(f.Name(), path)
}
