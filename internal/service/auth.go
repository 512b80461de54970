package service

import (
	"cmp"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/spool-run/spool"
	spoolv1 "github.com/spool-run/spool/gen/spool/v1"
	"github.com/spool-run/spool/internal/apierr"
	"github.com/spool-run/spool/internal/convert"
	"github.com/spool-run/spool/internal/token"
)

// Who may call spool is decided here, for every entrance alike: each
// operation of the core asks authorize for the permission it needs, with
// the credentials the entrance put in the context. Keys are checked against
// what the store held less than keyFresh ago (keycache.go): a revoked key
// stops working at once on the server that revoked it, and within a second
// on every other server sharing the store.

// Permission is what an operation needs.
type Permission int

const (
	// PermRead: jobs and their logs.
	PermRead Permission = iota
	// PermSubmit: enqueue and cancel jobs.
	PermSubmit
	// PermWork: lease jobs, heartbeat, publish, complete, hand back.
	PermWork
	// PermAdmin: keys.
	PermAdmin
	// PermMetrics: the /metrics page.
	PermMetrics
	// PermIngest: send the logs of programs spool did not start, and end
	// their sources.
	PermIngest
	// PermRepair: rewrite what the store holds of a log (a rebuild).
	PermRepair
	// PermOperate: pause and resume queues, delete jobs.
	PermOperate
)

var permNames = map[Permission]string{PermRead: "read jobs", PermSubmit: "submit or cancel jobs", PermWork: "run jobs",
	PermAdmin: "manage keys", PermMetrics: "read metrics", PermIngest: "send logs",
	PermRepair: "rebuild logs", PermOperate: "pause queues or delete jobs"}

// roles says which permissions each role has.
var roles = map[spoolv1.KeyRole][]Permission{
	spoolv1.KeyRole_KEY_ROLE_ADMIN:  {PermRead, PermSubmit, PermWork, PermAdmin, PermMetrics, PermIngest, PermRepair, PermOperate},
	spoolv1.KeyRole_KEY_ROLE_SUBMIT: {PermRead, PermSubmit, PermMetrics},
	spoolv1.KeyRole_KEY_ROLE_READ:   {PermRead, PermMetrics},
	// A worker reads the jobs it runs (to resume them after a restart).
	spoolv1.KeyRole_KEY_ROLE_WORKER: {PermWork, PermRead},
	// A log shipper's key only sends: it is stored in the shipper's
	// configuration (or in Firehose's), where it is easily seen.
	spoolv1.KeyRole_KEY_ROLE_INGEST: {PermIngest},
}

// Credentials are what a request presents. Every entrance puts them in the
// request's context (WithCredentials) before calling the core.
type Credentials struct {
	// Key is the API key sent (Authorization: Bearer KEY).
	Key string
	// Session is the web UI's login cookie.
	Session string
	// Ticket is a WebSocket ticket (?ticket=), which the door takes only
	// on a job's log stream: it opens that stream once and nothing else.
	Ticket string
	// JobToken is a job token (Authorization: Bearer jt1.…), the
	// credential a job's own process holds: it keeps its job's artifacts
	// and does nothing else.
	JobToken string
	// Host is the Host the request was sent to.
	Host string
	// Origin is the Origin of a browser's request ("" from other clients).
	Origin string
	// Secure says the request came over TLS (or through a proxy that says
	// so).
	Secure bool
}

// SessionCookie names the web UI's login cookie.
const SessionCookie = "spool_session"

type credentialsKey struct{}

// WithCredentials returns ctx carrying c.
func WithCredentials(ctx context.Context, c Credentials) context.Context {
	return context.WithValue(ctx, credentialsKey{}, c)
}

func credentialsFrom(ctx context.Context) Credentials {
	c, _ := ctx.Value(credentialsKey{}).(Credentials)
	return c
}

// Caller is who a request comes from, once its key is checked.
type Caller struct {
	// Name is the key's name (for the audit log).
	Name string
	Role spoolv1.KeyRole
	// Queues limit a worker key to these queues (empty: any).
	Queues []string
	hash   string
	// ticketJob, for a caller let in by a ticket, is the job whose log
	// stream the ticket opens: the only thing it may do.
	ticketJob string
	// job, for a caller let in by a job token, is what the token names:
	// the only thing it may do is keep artifacts of that job's attempt.
	job *token.Job
}

// mayUse reports whether the caller may act on jobs of queue.
func (c Caller) mayUse(queue string) bool {
	return len(c.Queues) == 0 || queue == "" || slices.Contains(c.Queues, queue)
}

// anyone is the caller when auth is disabled.
var anyone = Caller{Name: "anyone", Role: spoolv1.KeyRole_KEY_ROLE_ADMIN}

// authorize checks the request's Host and credentials and that they allow
// perm (on jobs of queue, when a worker key is limited to some queues). It
// returns the caller.
func (s *Service) authorize(ctx context.Context, perm Permission, queue string) (Caller, error) {
	cr := credentialsFrom(ctx)
	if err := s.CheckHost(cr.Host); err != nil {
		return Caller{}, err
	}
	c, err := s.callerOf(ctx, cr)
	if err != nil {
		return Caller{}, err
	}
	if err := c.ticketAllows(ctx, perm); err != nil {
		return Caller{}, err
	}
	if c.job != nil {
		return Caller{}, errJobTokenElsewhere(c.job.JobID)
	}
	if !slices.Contains(roles[c.Role], perm) {
		return Caller{}, apierr.Errorf(spool.ErrPermissionDenied, "key %q (role %s) may not %s%s", c.Name, convert.Role(c.Role).String(), permNames[perm], roleRemedy[perm])
	}
	if err := c.useQueue(perm, queue); err != nil {
		return Caller{}, err
	}
	return c, nil
}

// roleRemedy says what a caller refused for its role needs, where one
// role is the answer.
var roleRemedy = map[Permission]string{
	PermWork: ": a worker needs a worker key (an admin makes one with: spool keys create --role worker --name NAME)",
}

// queueRemedy says how a caller limited to some queues names one of them,
// by what it was doing.
var queueRemedy = map[Permission]string{
	PermWork:   "start the worker with -q %s",
	PermSubmit: "submit with -q %s",
	PermRead:   "name the queue (-q %s)",
}

// useQueue refuses a caller limited to other queues than queue, for perm.
func (c Caller) useQueue(perm Permission, queue string) error {
	if c.mayUse(queue) {
		return nil
	}
	remedy := fmt.Sprintf(cmp.Or(queueRemedy[perm], "name one of them (%s)"), c.Queues[0])
	return apierr.Errorf(spool.ErrPermissionDenied, "key %q may only use queues %s, not %q: %s", c.Name, strings.Join(c.Queues, ", "), queue, remedy)
}

// Authorize is authorize for entrances that serve something the core has
// no operation for (the /metrics page).
func (s *Service) Authorize(ctx context.Context, perm Permission) error {
	_, err := s.authorize(ctx, perm, "")
	return err
}

// authenticate finds the caller from an API key, a session or a ticket
// (which it spends: a ticket lets in one request).
func (s *Service) authenticate(ctx context.Context, cr Credentials) (Caller, error) {
	return s.identify(ctx, cr, true)
}

// identify finds the caller from an API key, a session or, with redeem, a
// ticket that is spent by this use; without redeem, a ticket only names
// its key (a stream it opened is checked again: see stillValid).
func (s *Service) identify(ctx context.Context, cr Credentials, redeem bool) (Caller, error) {
	if cr.JobToken != "" {
		// Checked even with auth disabled: it stands for one attempt of
		// one job, whose end must end what the token lets in.
		j, err := s.jobTokenOf(cr.JobToken)
		if err != nil {
			return Caller{}, err
		}
		return Caller{Name: "job " + j.JobID, job: &j}, nil
	}
	if s.cfg.Auth.Disabled {
		return anyone, nil
	}
	var hash, ticketJob string
	switch {
	case cr.Key != "":
		hash = HashKey(cr.Key)
	case cr.Session != "":
		ss, err := s.liveSession(ctx, cr.Session)
		if err != nil {
			return Caller{}, err
		}
		hash = ss.KeyHash
	case cr.Ticket != "":
		tk, err := s.ticketOf(ctx, cr.Ticket, redeem)
		if err != nil {
			return Caller{}, err
		}
		hash, ticketJob = tk.KeyHash, tk.JobID
	default:
		return Caller{}, apierr.Errorf(spool.ErrUnauthenticated,
			"an API key is needed: send it as Authorization: Bearer KEY (the command line reads --api-key, SPOOL_API_KEY or the key `spool login` stored); an admin creates keys with `spool keys create`")
	}
	k, err := s.keyByHash(ctx, hash)
	if errors.Is(err, spool.ErrNotFound) {
		return Caller{}, apierr.Errorf(spool.ErrUnauthenticated, "this API key is not known to the server: check SPOOL_API_KEY, or ask an admin for a key")
	}
	if err != nil {
		return Caller{}, s.fail(ctx, "authenticate", err)
	}
	if at := k.Key.GetRevokedAt(); at != nil {
		return Caller{}, apierr.Errorf(spool.ErrUnauthenticated, "API key %q was revoked at %s", k.Key.GetName(), at.AsTime().Format(time.RFC3339))
	}
	s.touch(ctx, hash)
	return Caller{Name: k.Key.GetName(), Role: k.Key.GetRole(), Queues: k.Key.GetQueues(), hash: hash, ticketJob: ticketJob}, nil
}

// touchEvery is how often a key's last use is written: often enough to
// tell keys in use from forgotten ones, seldom enough to cost nothing.
const touchEvery = time.Minute

// touches remembers when this server last wrote each key's last use.
type touches struct {
	mu   sync.Mutex
	last map[string]time.Time
}

// touch records a key's use, at most once per touchEvery per server.
func (s *Service) touch(ctx context.Context, hash string) {
	now := time.Now()
	s.touched.mu.Lock()
	if s.touched.last == nil {
		s.touched.last = map[string]time.Time{}
	}
	due := now.Sub(s.touched.last[hash]) >= touchEvery
	if due {
		s.touched.last[hash] = now
	}
	s.touched.mu.Unlock()
	if due {
		if err := s.store.TouchKey(context.WithoutCancel(ctx), hash, now.UTC().Truncate(time.Microsecond)); err != nil {
			s.log.Warn("could not record a key's use", "error", err)
		}
	}
}

// CheckHost refuses a request sent to a name the server does not answer
// to. A web page can point its own name at the server's address (DNS
// rebinding) to make a visitor's browser call it as a same-origin page:
// refusing unknown names stops that before anything else. IP addresses,
// localhost and the configured public names are known.
func (s *Service) CheckHost(host string) error {
	h := host
	if hh, _, err := net.SplitHostPort(host); err == nil {
		h = hh
	}
	h = strings.TrimSuffix(strings.ToLower(strings.Trim(h, "[]")), ".")
	switch {
	case h == "":
		return apierr.Errorf(spool.ErrPermissionDenied, "a Host header is needed")
	case h == "localhost" || strings.HasSuffix(h, ".localhost") || net.ParseIP(h) != nil:
		return nil
	case slices.ContainsFunc(s.cfg.Server.PublicHosts, func(p string) bool { return strings.EqualFold(p, h) }):
		return nil
	}
	return apierr.Errorf(spool.ErrPermissionDenied, "this server does not answer to the name %q: add it to server.public_hosts if clients reach the server by that name", h)
}

// CheckOrigin refuses a browser request from a page of another site: its
// Origin must be the server itself (the Host it was sent to) or one of the
// configured CORS origins. Requests without an Origin (not from a browser)
// pass.
func (s *Service) CheckOrigin(cr Credentials) error {
	if cr.Origin == "" {
		return nil
	}
	u, err := url.Parse(cr.Origin)
	if err == nil && strings.EqualFold(u.Host, cr.Host) {
		return nil
	}
	if slices.Contains(s.cfg.Server.CORSOrigins, strings.TrimSuffix(cr.Origin, "/")) {
		return nil
	}
	return apierr.Errorf(spool.ErrPermissionDenied, "requests from pages of %s are refused: only spool's own pages (and server.cors_origins) may call it from a browser", cr.Origin)
}

// KeyPrefix starts every API key, so a key in a log or a diff is
// recognisable (and secret scanners can find it).
const KeyPrefix = "spool_"

// NewSecret returns a new random API key: 256 bits.
func NewSecret() string {
	var b [32]byte
	_, _ = rand.Read(b[:])
	return KeyPrefix + base64.RawURLEncoding.EncodeToString(b[:])
}

// HashKey is what the store keeps of a key: its SHA-256. Keys are 256
// random bits, so a fast hash is enough; nothing can be guessed from it.
func HashKey(secret string) string {
	sum := sha256.Sum256([]byte(strings.TrimSpace(secret)))
	return hex.EncodeToString(sum[:])
}

// sessionFor is the session cookie value for a login with key hash: a new
// session, with an id of its own that a sign-out can end.
func (s *Service) sessionFor(hash string) (string, time.Time) {
	until := time.Now().Add(time.Duration(s.cfg.Auth.SessionHours) * time.Hour)
	return s.signer.SignSession(token.Session{KeyHash: hash, ID: newTokenID(), Expires: until.Unix()}), until
}
