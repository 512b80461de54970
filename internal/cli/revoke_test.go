package cli

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/spool-run/spool"
	"github.com/spool-run/spool/client"
	"github.com/spool-run/spool/spooltest"
)

// TestFollowEndsWhenKeyRevoked: spool logs -f and spool submit -f,
// following a job that prints nothing more, stop within seconds of their
// key's revocation, saying so, without trying to reconnect.
func TestFollowEndsWhenKeyRevoked(t *testing.T) {
	t.Parallel()
	srv := spooltest.NewServer(t)
	follow := func(t *testing.T, role spool.Role, args func(jobID string) []string, lease func() *spooltest.Lease) {
		name := "follower-" + role.String()
		_, key, err := srv.Client().CreateKey(context.Background(), client.KeyParams{Name: name, Role: role})
		if err != nil {
			t.Fatal(err)
		}
		var (
			l    *spooltest.Lease
			done = make(chan result, 1)
		)
		as := func(jobID string) {
			go func() { done <- runLocal(append([]string{"--server", srv.URL, "--api-key", key}, args(jobID)...)...) }()
		}
		if l = lease(); l != nil {
			as(l.JobID())
		} else {
			as("")
			l = spooltest.LeaseJob(t, srv, "")
		}
		l.Begin()
		l.Write(spooltest.Seq(1, 1)...)
		// Following: the job counts as watched.
		eventually(t, "the follow to open", func() bool { _, watched := l.Heartbeat(); return watched })
		if _, err := srv.Client().RevokeKey(context.Background(), name); err != nil {
			t.Fatal(err)
		}
		revoked := time.Now()
		r := await(t, done)
		took := time.Since(revoked)
		if r.code != 1 || r.stdout != "1\n" || !strings.Contains(r.stderr, `API key "`+name+`" was revoked`) ||
			!strings.Contains(r.stderr, "the key sent came from --api-key") || strings.Contains(r.stderr, "reconnecting") {
			t.Fatalf("exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
		}
		if took > 10*time.Second {
			t.Errorf("the follow outlived the revocation by %v", took)
		}
		t.Logf("the follow ended %v after the revocation", took.Round(time.Millisecond))
		l.End(0)
	}
	t.Run("logs -f", func(t *testing.T) {
		follow(t, spool.RoleRead, func(jobID string) []string { return []string{"logs", "-f", jobID} }, func() *spooltest.Lease {
			if _, _, err := srv.Client().Submit(context.Background(), client.SubmitParams{Argv: []string{"make"}}); err != nil {
				t.Fatal(err)
			}
			return spooltest.LeaseJob(t, srv, "")
		})
	})
	t.Run("submit -f", func(t *testing.T) {
		follow(t, spool.RoleSubmit, func(string) []string { return []string{"submit", "-f", "--", "make"} }, func() *spooltest.Lease { return nil })
	})
}
