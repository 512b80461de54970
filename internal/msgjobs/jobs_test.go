package msgjobs_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/spool-run/spool"
	"github.com/spool-run/spool/client"
	"github.com/spool-run/spool/consumer"
	"github.com/spool-run/spool/internal/msgjobs"
	"github.com/spool-run/spool/spooltest"
)

// msg is a message of topic "jobs", partition 0, at offset.
func msg(offset int64, value string) consumer.Message {
	return consumer.Message{Topic: "jobs", Partition: 0, Offset: offset, Value: []byte(value), Key: []byte("k"),
		Timestamp: time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)}
}

// jobsOf lists every job of the server, by request id.
func jobsOf(t *testing.T, c *client.Client) map[string]*spool.Job {
	t.Helper()
	out := map[string]*spool.Job{}
	for j, err := range c.Jobs(context.Background(), client.ListParams{}) {
		if err != nil {
			t.Fatal(err)
		}
		if _, dup := out[j.RequestID]; dup {
			t.Fatalf("two jobs of request %s", j.RequestID)
		}
		out[j.RequestID] = j
	}
	return out
}

// TestSpecsBecomeJobsOnce: each message of a batch becomes one job, and
// the same batch delivered again makes none.
func TestSpecsBecomeJobsOnce(t *testing.T) {
	srv := spooltest.NewServer(t)
	c := srv.Client()
	h := msgjobs.Handler(msgjobs.Config{Client: c, Queue: "from-kafka"})
	batch := []consumer.Message{
		msg(0, `{"argv": ["echo", "zero"]}`),
		msg(1, `{"shell": "echo one", "queue": "other", "env": {"A": "b"}, "timeout": "1m"}`),
	}
	for range 2 {
		commit, err := h(context.Background(), batch)
		if !commit || err != nil {
			t.Fatalf("batch: commit=%v err=%v", commit, err)
		}
	}
	jobs := jobsOf(t, c)
	if len(jobs) != 2 {
		t.Fatalf("%d jobs for 2 messages: %v", len(jobs), jobs)
	}
	zero, one := jobs["kafka:jobs/0/0"], jobs["kafka:jobs/0/1"]
	if zero.Queue != "from-kafka" || strings.Join(zero.Params.Argv, " ") != "echo zero" {
		t.Fatalf("job of offset 0: %v", zero)
	}
	env := one.Params.Env
	if one.Queue != "other" || one.Params.Script != "echo one" || env["A"] != "b" ||
		env["SPOOL_MESSAGE_TOPIC"] != "jobs" || env["SPOOL_MESSAGE_PARTITION"] != "0" || env["SPOOL_MESSAGE_OFFSET"] != "1" ||
		env["SPOOL_MESSAGE_KEY"] != "k" || env["SPOOL_MESSAGE_TIMESTAMP"] != "2026-11-23T12:00:00Z" {
		t.Fatalf("job of offset 1: queue %s params %v", one.Queue, one.Params)
	}
}

// TestCommandGetsTheMessageOnStdin: with a command, every message runs it
// with the value on stdin; a key that is not text comes in base64.
func TestCommandGetsTheMessageOnStdin(t *testing.T) {
	srv := spooltest.NewServer(t)
	c := srv.Client()
	h := msgjobs.Handler(msgjobs.Config{Client: c, Command: client.SubmitParams{Queue: "q", Argv: []string{"wc", "-c"}, Env: map[string]string{"X": "1"}}})
	m := msg(5, "any bytes \x00\xff")
	m.Key = []byte{0, 1, 2}
	if commit, err := h(context.Background(), []consumer.Message{m}); !commit || err != nil {
		t.Fatalf("commit=%v err=%v", commit, err)
	}
	j := jobsOf(t, c)["kafka:jobs/0/5"]
	p := j.Params
	if j.Queue != "q" || string(p.Stdin) != "any bytes \x00\xff" || p.Env["X"] != "1" ||
		p.Env["SPOOL_MESSAGE_KEY_BASE64"] != "AAEC" || p.Env["SPOOL_MESSAGE_KEY"] != "" {
		t.Fatalf("job %v", j)
	}
}

// TestBadMessagesAreRecordedNotDropped: a message that is not a spec, and
// one the server refuses, each become a failed job that carries the
// message and the reason; the batch is committed, so the consumer never
// stalls on them.
func TestBadMessagesAreRecordedNotDropped(t *testing.T) {
	srv := spooltest.NewServer(t)
	c := srv.Client()
	h := msgjobs.Handler(msgjobs.Config{Client: c})
	batch := []consumer.Message{msg(0, `{"argv": "oops"}`), msg(1, `{"shell": "true", "queue": "no spaces allowed"}`), msg(2, `{"argv": ["true"]}`)}
	for range 2 {
		if commit, err := h(context.Background(), batch); !commit || err != nil {
			t.Fatalf("commit=%v err=%v", commit, err)
		}
	}
	jobs := jobsOf(t, c)
	if len(jobs) != 3 {
		t.Fatalf("%d jobs for 3 messages", len(jobs))
	}
	for _, tc := range []struct{ id, value, reason string }{
		{"kafka:jobs/0/0/rejected", `{"argv": "oops"}`, `"argv" must be an array`},
		{"kafka:jobs/0/1/rejected", `{"shell": "true", "queue": "no spaces allowed"}`, "queue"},
	} {
		j := jobs[tc.id]
		if j.State != spool.Failed || string(j.Params.Stdin) != tc.value ||
			!strings.Contains(j.Result.Error, "jobs/0@") || !strings.Contains(j.Result.Error, tc.reason) {
			t.Errorf("rejected job %s: %s stdin %q result %v", tc.id, j.State, j.Params.Stdin, j.Result)
		}
	}
	if j := jobs["kafka:jobs/0/2"]; j.State == spool.Failed {
		t.Errorf("the good message's job failed: %v", j)
	}
}

// TestDeadLetterTakesBadMessages: with a dead-letter function, a bad
// message goes there with its reason and makes no job; when it cannot be
// sent, the batch is refused.
func TestDeadLetterTakesBadMessages(t *testing.T) {
	srv := spooltest.NewServer(t)
	c := srv.Client()
	var (
		mu   sync.Mutex
		sent []string
		fail = true
	)
	h := msgjobs.Handler(msgjobs.Config{Client: c, DeadLetter: func(_ context.Context, m consumer.Message, reason string) error {
		mu.Lock()
		defer mu.Unlock()
		if fail {
			return errors.New("broker away")
		}
		sent = append(sent, string(m.Value)+" | "+reason)
		return nil
	}})
	batch := []consumer.Message{msg(0, `nope`), msg(1, `{"argv": ["true"]}`)}
	if commit, err := h(context.Background(), batch); commit || err == nil || !strings.Contains(err.Error(), "dead-letter") {
		t.Fatalf("a dead-letter topic that cannot be reached: commit=%v err=%v", commit, err)
	}
	fail = false
	if commit, err := h(context.Background(), batch); !commit || err != nil {
		t.Fatalf("commit=%v err=%v", commit, err)
	}
	if len(sent) != 1 || !strings.HasPrefix(sent[0], "nope | message jobs/0@0 cannot become a job: not a job spec: invalid JSON") {
		t.Fatalf("dead letters: %q", sent)
	}
	if jobs := jobsOf(t, c); len(jobs) != 1 || jobs["kafka:jobs/0/1"] == nil {
		t.Fatalf("jobs: %v", jobs)
	}
}

// TestServerAwayRefusesTheBatch: a server that cannot be reached makes
// the handler refuse the batch (it comes back), and once the server is
// back, the same batch makes each job once.
func TestServerAwayRefusesTheBatch(t *testing.T) {
	srv := spooltest.NewServer(t)
	c := srv.Client()
	h := msgjobs.Handler(msgjobs.Config{Client: c})
	batch := []consumer.Message{msg(0, `{"argv": ["true"]}`), msg(1, `{"argv": ["true"]}`)}
	if commit, err := h(context.Background(), batch[:1]); !commit || err != nil {
		t.Fatalf("commit=%v err=%v", commit, err)
	}
	srv.Stop()
	commit, err := h(context.Background(), batch)
	if commit || !errors.Is(err, spool.ErrUnavailable) {
		t.Fatalf("with the server away: commit=%v err=%v", commit, err)
	}
	srv.Restart()
	if commit, err := h(context.Background(), batch); !commit || err != nil {
		t.Fatalf("commit=%v err=%v", commit, err)
	}
	if jobs := jobsOf(t, c); len(jobs) != 2 {
		t.Fatalf("%d jobs for 2 messages", len(jobs))
	}
}

// TestOversizedMessagesAreRecorded: a value too large for a job's stdin,
// and a key too long for its environment, are recorded as rejected jobs
// that keep as much as a job holds and say why.
func TestOversizedMessagesAreRecorded(t *testing.T) {
	srv := spooltest.NewServer(t)
	c := srv.Client()
	h := msgjobs.Handler(msgjobs.Config{Client: c, Command: client.SubmitParams{Queue: "big", Argv: []string{"wc", "-c"}}})
	big := msg(0, strings.Repeat("x", msgjobs.MaxStdin+10))
	longKey := msg(1, "small")
	longKey.Key = []byte(strings.Repeat("k", msgjobs.MaxKey+1))
	if commit, err := h(context.Background(), []consumer.Message{big, longKey}); !commit || err != nil {
		t.Fatalf("commit=%v err=%v", commit, err)
	}
	jobs := jobsOf(t, c)
	if len(jobs) != 2 {
		t.Fatalf("%d jobs for 2 messages", len(jobs))
	}
	j := jobs["kafka:jobs/0/0/rejected"]
	if j.Queue != "big" || len(j.Params.Stdin) != msgjobs.MaxStdin ||
		!strings.Contains(j.Result.Error, "a job's stdin holds at most") || !strings.Contains(j.Result.Error, "keeps the first") {
		t.Errorf("the big message's job: queue %s, %d bytes of stdin, %v", j.Queue, len(j.Params.Stdin), j.Result)
	}
	j = jobs["kafka:jobs/0/1/rejected"]
	env := j.Params.Env
	if !strings.Contains(j.Result.Error, "its key holds") || env["SPOOL_MESSAGE_OFFSET"] != "1" || env["SPOOL_MESSAGE_KEY"] != "" ||
		string(j.Params.Stdin) != "small" {
		t.Errorf("the long key's job: env %v, %v", env, j.Result)
	}
}

// TestSpecsNameTheirSecrets: a spec's job gets the secrets of spool
// consume's that it names, and no other; one naming a secret spool consume
// does not hold is recorded as rejected, saying so, with no value in it.
// With a command, every job gets every secret.
func TestSpecsNameTheirSecrets(t *testing.T) {
	srv := spooltest.NewServer(t)
	c := srv.Client()
	held := map[string]string{"DEPLOY_TOKEN": "deploy-token-value", "OTHER": "other-value"}
	h := msgjobs.Handler(msgjobs.Config{Client: c, Secrets: held})
	commit, err := h(context.Background(), []consumer.Message{
		msg(0, `{"shell": "./deploy.sh", "secrets": ["DEPLOY_TOKEN"]}`),
		msg(1, `{"shell": "./deploy.sh", "secrets": ["MISSING"]}`),
	})
	if !commit || err != nil {
		t.Fatalf("batch: commit=%v err=%v", commit, err)
	}
	h = msgjobs.Handler(msgjobs.Config{Client: c, Command: client.SubmitParams{Queue: "cmd", Argv: []string{"./each.sh"}, Secrets: held}})
	if commit, err := h(context.Background(), []consumer.Message{msg(2, "input")}); !commit || err != nil {
		t.Fatalf("batch with a command: commit=%v err=%v", commit, err)
	}
	jobs := jobsOf(t, c)
	if got := jobs["kafka:jobs/0/0"].Params.SecretNames; len(got) != 1 || got[0] != "DEPLOY_TOKEN" {
		t.Fatalf("the spec's job has secrets %v, want DEPLOY_TOKEN alone", got)
	}
	rejected := jobs["kafka:jobs/0/1/rejected"]
	if !strings.Contains(rejected.Result.Error, `"MISSING", which is not a secret spool consume was given`) {
		t.Fatalf("a spec naming a secret not held: %v", rejected.Result)
	}
	if got := jobs["kafka:jobs/0/2"].Params.SecretNames; len(got) != 2 {
		t.Fatalf("the command's job has secrets %v, want both", got)
	}
	l := spooltest.LeaseJob(t, srv, "default")
	if l.JobID() != jobs["kafka:jobs/0/0"].ID || len(l.Secrets()) != 1 || l.Secrets()["DEPLOY_TOKEN"] != held["DEPLOY_TOKEN"] {
		t.Fatalf("the lease of the spec's job carries %d secrets", len(l.Secrets()))
	}
}
