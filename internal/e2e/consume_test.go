package e2e

import (
	"github.com/spool-run/spool/internal/testcert"

	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/plain"

	"github.com/spool-run/spool"
	"github.com/spool-run/spool/client"
)

// eventHubsString is an Event Hubs connection string as the portal shows
// one; the test broker takes it as the SASL PLAIN password of the user
// "$ConnectionString", as Event Hubs does.
const eventHubsString = "Endpoint=sb://spool-test.servicebus.windows.net/;SharedAccessKeyName=RootManageSharedAccessKey;SharedAccessKey=c2VjcmV0LWtleQ==;EntityPath=jobs"

// eventHubsCluster is a Kafka cluster that demands what the Event Hubs
// Kafka endpoint demands: TLS, and SASL PLAIN with the connection string.
// It returns the cluster and the file of the CA its certificate comes
// from.
func eventHubsCluster(t *testing.T, partitions int32, topics ...string) (*kfake.Cluster, string) {
	t.Helper()
	files, serverCert := testcert.New(t)
	caFile := files.CA
	c, err := kfake.NewCluster(
		kfake.NumBrokers(1),
		kfake.SeedTopics(partitions, topics...),
		kfake.EnableSASL(),
		kfake.Superuser("PLAIN", "$ConnectionString", eventHubsString),
		kfake.TLS(&tls.Config{Certificates: []tls.Certificate{serverCert}, MinVersion: tls.VersionTLS12}),
		kfake.GroupMinSessionTimeout(time.Second),
	)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c, caFile
}

// producer is a client of the cluster that produces as the test needs.
func producer(t *testing.T, c *kfake.Cluster, caFile string) *kgo.Client {
	t.Helper()
	pool := x509.NewCertPool()
	b, _ := os.ReadFile(caFile)
	pool.AppendCertsFromPEM(b)
	p, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...),
		kgo.SASL(plain.Auth{User: "$ConnectionString", Pass: eventHubsString}.AsMechanism()),
		kgo.DialTLSConfig(&tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}),
		kgo.ConsumeTopics("dead-letters"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	return p
}

// produceSpecs produces messages from-to (exclusive) to topic jobs: job
// specs, but every tenth one is not JSON.
func produceSpecs(t *testing.T, p *kgo.Client, from, to int) {
	t.Helper()
	var recs []*kgo.Record
	for i := from; i < to; i++ {
		v := fmt.Sprintf(`{"argv": ["echo", "%d"]}`, i)
		if i%10 == 9 {
			v = fmt.Sprintf("message %d is not a job spec", i)
		}
		recs = append(recs, &kgo.Record{Topic: "jobs", Key: []byte(fmt.Sprint(i)), Value: []byte(v)})
	}
	if err := p.ProduceSync(context.Background(), recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
}

// consumeArgs runs `spool consume` against the Event Hubs look-alike,
// overriding the broker and CA as a test against a local broker must.
func consumeArgs(c *kfake.Cluster, caFile, server string, extra ...string) []string {
	return append([]string{"consume", "--server", server, "--brokers", strings.Join(c.ListenAddrs(), ","), "--tls-ca", caFile,
		"--group", "spool", "--batch-size", "20", "--batch-timeout", "200ms", "--session-timeout", "1s", "--log-level", "debug"}, extra...)
}

// jobsByRequest counts the server's jobs by request id.
func jobsByRequest(t *testing.T, c *client.Client) (map[string]*spool.Job, int) {
	t.Helper()
	out, n := map[string]*spool.Job{}, 0
	for j, err := range c.Jobs(context.Background(), client.ListParams{}) {
		if err != nil {
			t.Fatal(err)
		}
		out[j.RequestID] = j
		n++
	}
	return out, n
}

// TestConsumeKilledAndRestarted: `spool consume` reads an Event Hubs
// look-alike (TLS, SASL PLAIN with the connection string), is killed (-9)
// mid-stream and started again: every message has exactly one job (the
// bad ones a rejected job each), and SIGTERM then stops it with exit 0.
func TestConsumeKilledAndRestarted(t *testing.T) {
	t.Parallel()
	addr, data := freePort(t), t.TempDir()
	_, c := startServer(t, addr, data)
	kc, caFile := eventHubsCluster(t, 3, "jobs")
	p := producer(t, kc, caFile)
	env := []string{"SPOOL_API_KEY=" + adminKey, "SPOOL_EVENTHUBS_CONNECTION_STRING=" + eventHubsString}
	const n = 400
	produceSpecs(t, p, 0, n/2)
	first := runIn(t, "consume (first)", "", env, consumeArgs(kc, caFile, "http://"+addr)...)
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(20 * time.Millisecond) {
		if _, got := jobsByRequest(t, c); got >= 30 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the consumer made no jobs")
		}
	}
	first.kill9(t)
	produceSpecs(t, p, n/2, n)
	second := runIn(t, "consume (second)", "", env, consumeArgs(kc, caFile, "http://"+addr)...)
	var jobs map[string]*spool.Job
	for deadline := time.Now().Add(2 * time.Minute); ; time.Sleep(50 * time.Millisecond) {
		var total int
		jobs, total = jobsByRequest(t, c)
		if total > n {
			t.Fatalf("%d jobs for %d messages", total, n)
		}
		if total == n {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d jobs for %d messages after the restart", total, n)
		}
	}
	rejected := 0
	for id, j := range jobs {
		if strings.HasSuffix(id, "/rejected") {
			rejected++
			if j.State != spool.Failed || !strings.Contains(string(j.Params.Stdin), "is not a job spec") ||
				!strings.Contains(j.Result.Error, "invalid JSON") {
				t.Errorf("rejected job %s: %s, stdin %q, %v", id, j.State, j.Params.Stdin, j.Result)
			}
		}
	}
	if rejected != n/10 {
		t.Errorf("%d rejected jobs for %d bad messages", rejected, n/10)
	}
	if err := second.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := second.cmd.Wait(); err != nil {
		t.Fatalf("spool consume after SIGTERM: %v", err)
	}
	if !strings.Contains(second.out.String(), "stopping gracefully") {
		t.Errorf("no word of the graceful stop in:\n%s", second.out.String())
	}
}

// TestConsumeDeadLetters: with --dead-letter-topic, a message that cannot
// become a job goes there, with the reason and where it came from, and
// makes no job; a wrong connection string is refused with a clear error.
func TestConsumeDeadLetters(t *testing.T) {
	t.Parallel()
	addr, data := freePort(t), t.TempDir()
	_, c := startServer(t, addr, data)
	kc, caFile := eventHubsCluster(t, 1, "jobs", "dead-letters")
	p := producer(t, kc, caFile)
	env := []string{"SPOOL_API_KEY=" + adminKey, "SPOOL_EVENTHUBS_CONNECTION_STRING=" + eventHubsString}
	produceSpecs(t, p, 0, 10)
	cons := runIn(t, "consume", "", env, consumeArgs(kc, caFile, "http://"+addr, "--dead-letter-topic", "dead-letters")...)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	fs := p.PollFetches(ctx)
	if err := fs.Err(); err != nil {
		t.Fatal(err)
	}
	recs := fs.Records()
	if len(recs) != 1 || string(recs[0].Value) != "message 9 is not a job spec" {
		t.Fatalf("dead letters: %v", recs)
	}
	headers := map[string]string{}
	for _, h := range recs[0].Headers {
		headers[h.Key] = string(h.Value)
	}
	if headers["spool-source-topic"] != "jobs" || headers["spool-source-offset"] != "9" || !strings.Contains(headers["spool-reason"], "invalid JSON") {
		t.Fatalf("dead letter headers: %v", headers)
	}
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(20 * time.Millisecond) {
		jobs, total := jobsByRequest(t, c)
		if total == 9 {
			for id := range jobs {
				if strings.HasSuffix(id, "/rejected") {
					t.Fatalf("a rejected job %s although the message went to the dead-letter topic", id)
				}
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d jobs for 9 good messages", total)
		}
	}
	if err := cons.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := cons.cmd.Wait(); err != nil {
		t.Fatalf("spool consume after SIGTERM: %v", err)
	}

	bad := strings.Replace(eventHubsString, "c2VjcmV0LWtleQ==", "d3Jvbmc=", 1)
	wrong := runIn(t, "consume (wrong key)", "", []string{"SPOOL_API_KEY=" + adminKey, "SPOOL_EVENTHUBS_CONNECTION_STRING=" + bad},
		consumeArgs(kc, caFile, "http://"+addr)...)
	err := wrong.cmd.Wait()
	if err == nil || !strings.Contains(strings.ToLower(wrong.out.String()), "authentication") || strings.Contains(wrong.out.String(), "d3Jvbmc=") {
		t.Fatalf("a wrong connection string: %v\n%s", err, wrong.out.String())
	}
}
