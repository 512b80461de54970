package cli

import (
	"bytes"
	"context"
	"net"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/spool-run/spool/internal/safebuf"
)

// runStdin runs spool with args, as a shell would, with stdin.
func runStdin(stdin string, args ...string) result {
	var out, errOut bytes.Buffer
	code := Main(args, strings.NewReader(stdin), &out, &errOut)
	return result{code: code, stdout: out.String(), stderr: errOut.String()}
}

// startDevKafka runs `spool dev kafka` with cfg until the test ends, and
// returns the address it says it listens on, and its output.
func startDevKafka(t *testing.T, cfg devKafkaConfig) (string, *safebuf.Buffer, func() error) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	out := &safebuf.Buffer{}
	done := make(chan error, 1)
	go func() { done <- runDevKafka(ctx, cfg, &env{out: out, errOut: out}) }()
	stop := sync.OnceValue(func() error {
		cancel()
		select {
		case err := <-done:
			return err
		case <-time.After(30 * time.Second):
			t.Error("spool dev kafka did not stop")
			return nil
		}
	})
	t.Cleanup(func() { _ = stop() })
	at := regexp.MustCompile(`broker at (127\.0\.0\.1:\d+),`)
	eventually(t, "spool dev kafka to say where it listens", func() bool { return at.MatchString(out.String()) })
	return at.FindStringSubmatch(out.String())[1], out, stop
}

// TestDevKafka: the development broker serves Kafka on loopback with its
// topic; `spool dev kafka produce` sends arguments, or the lines of stdin,
// in order, with the key given, and says where each went; a Kafka client
// reads them back; the broker stops when told and frees its port.
func TestDevKafka(t *testing.T) {
	t.Parallel()
	addr, out, stop := startDevKafka(t, devKafkaConfig{port: 0, topics: []string{"jobs"}, partitions: 1})
	for _, want := range []string{"FOR DEVELOPMENT ONLY", "spool consume --brokers " + addr + " --topic jobs"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("spool dev kafka does not say %q:\n%s", want, out.String())
		}
	}

	r := runLocal("dev", "kafka", "produce", "--brokers", addr, "--key", "k1", `{"argv": ["echo", "one"]}`, "two")
	if r.code != 0 || r.stdout != "jobs/0@0\njobs/0@1\n" {
		t.Fatalf("produce with arguments: exit %d, stdout %q, stderr %q; want jobs/0@0 and jobs/0@1", r.code, r.stdout, r.stderr)
	}
	r = runStdin("three\n\nfour\n", "dev", "kafka", "produce", "--brokers", addr, "--topic", "jobs")
	if r.code != 0 || r.stdout != "jobs/0@2\njobs/0@3\n" {
		t.Fatalf("produce from stdin: exit %d, stdout %q, stderr %q; want the two lines that are not empty at offsets 2 and 3", r.code, r.stdout, r.stderr)
	}
	// A topic not made at start is made on first use.
	if r = runLocal("dev", "kafka", "produce", "--brokers", addr, "--topic", "other", "five"); r.code != 0 || r.stdout != "other/0@0\n" {
		t.Fatalf("produce to a new topic: exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}

	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ConsumeTopics("jobs"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	var got []string
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for len(got) < 4 && ctx.Err() == nil {
		cl.PollFetches(ctx).EachRecord(func(r *kgo.Record) {
			got = append(got, string(r.Key)+"="+string(r.Value))
		})
	}
	want := []string{`k1={"argv": ["echo", "one"]}`, "k1=two", "=three", "=four"}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("the topic holds %q; want %q", got, want)
	}
	cl.Close()

	if err := stop(); err != nil {
		t.Fatalf("spool dev kafka ended with %v; want nil on a signal", err)
	}
	if !strings.Contains(out.String(), "stopped; its messages are gone") {
		t.Errorf("spool dev kafka did not say it stopped:\n%s", out.String())
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatalf("the broker's port is still taken after it stopped: %v", err)
	}
	ln.Close()
}

// TestDevKafkaRefusals: what cannot work is refused with what to do.
func TestDevKafkaRefusals(t *testing.T) {
	t.Parallel()
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	port := busy.Addr().(*net.TCPAddr).Port
	wantRefusal(t, "port in use", runLocal("dev", "kafka", "--port", strconv.Itoa(port)),
		"--port "+strconv.Itoa(port)+" is in use by another program: stop it or choose another --port")
	wantRefusal(t, "no partitions", runLocal("dev", "kafka", "--partitions", "0"), "--partitions must be at least 1, got 0")
	wantRefusal(t, "port out of range", runLocal("dev", "kafka", "--port", "70000"), "--port 70000: use a port from 1 to 65535, or 0 for any free one")

	// Nothing listens on a port just freed.
	free, _ := net.Listen("tcp", "127.0.0.1:0")
	nobody := free.Addr().String()
	free.Close()
	r := runLocal("dev", "kafka", "produce", "--brokers", nobody, "x")
	if r.code != 1 || !strings.Contains(r.stderr, "no Kafka broker answers at "+nobody) || !strings.Contains(r.stderr, "start one with `spool dev kafka`") {
		t.Errorf("produce without a broker: exit %d, stderr %q; want it to say none answers and how to start one", r.code, r.stderr)
	}

	addr, _, _ := startDevKafka(t, devKafkaConfig{port: 0, topics: []string{"jobs"}, partitions: 1})
	wantRefusal(t, "nothing to send", runStdin("\n\n", "dev", "kafka", "produce", "--brokers", addr),
		"nothing to send: give the messages as arguments, or as lines on stdin")
}
