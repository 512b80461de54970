package cli

import (
	"context"
	"strings"
	"testing"

	"github.com/spool-run/spool/client"
	"github.com/spool-run/spool/spooltest"
)

// TestConsumeCommandBadInput: flags that cannot work are refused before
// anything connects, with a message that says what to do.
func TestConsumeCommandBadInput(t *testing.T) {
	t.Parallel()
	srv := spooltest.NewServer(t)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"consume", "--topic", "jobs"}, "say where to consume from"},
		{[]string{"consume", "--brokers", "k:9092", "--topic", "jobs", "--start-at", "yesterday"}, "--start-at"},
		{[]string{"consume", "--brokers", "k:9092", "--topic", "jobs", "--batch-size", "0"}, "--batch-size"},
		{[]string{"consume", "--brokers", "k:9092", "--topic", "jobs", "--sasl-plain", "nopassword"}, "USER:PASS"},
		{[]string{"consume", "--brokers", "k:9092", "--topic", "jobs", "-e", "A=b"}, "applies to a COMMAND"},
		{[]string{"consume", "--brokers", "k:9092", "--topic", "jobs", "--request-id", "x", "--", "true"}, "comes from its message"},
		{[]string{"consume", "--brokers", "k:9092"}, "Topic"},
		{[]string{"consume", "--brokers", "k:9092", "--topic", "a", "--topic-regex", "a.*"}, "--topic and --topic-regex"},
		{[]string{"consume", "--brokers", "k:9092", "--topic", "a", "--instance-id", "pod 1"}, "InstanceID \"pod 1\" is not a valid instance id"},
		{[]string{"consume", "--brokers", "k:9092", "--topic-regex", "jobs-.*", "--dead-letter-topic", "jobs-dead"}, "--dead-letter-topic jobs-dead is also consumed"},
		{[]string{"consume", "--brokers", "k:9092", "--topic", "jobs,dead", "--dead-letter-topic", "dead"}, "--dead-letter-topic dead is also consumed"},
		{[]string{"consume", "--brokers", "k:9092", "--topic-regex", "jobs-(a"}, "TopicRegex \"jobs-(a\" does not compile"},
		{[]string{"consume", "--brokers", "k:9092", "--topic", "a,b,a"}, "Topics names \"a\" twice"},
		{[]string{"consume", "--eventhubs-connection-string", "Endpoint=sb://ns.servicebus.windows.net;SharedAccessKeyName=n;SharedAccessKey=secret-key", "--topic", "a", "--topic", "b"}, "an Event Hubs consumer reads one event hub"},
		{[]string{"consume", "--eventhubs-connection-string", "Endpoint=http://x;SharedAccessKey=secret-key"}, "Endpoint"},
	} {
		r := run(srv, tc.args...)
		if r.code == 0 || !strings.Contains(r.stderr, tc.want) {
			t.Errorf("%q: exit %d, stderr %q; want it to mention %q", tc.args, r.code, r.stderr, tc.want)
		}
		if strings.Contains(r.stderr, "secret-key") {
			t.Errorf("%q: the error shows the key: %s", tc.args, r.stderr)
		}
	}
}

// TestJobsGetShowsARejectedJob: a job recorded as rejected says it never
// ran and shows what it carries on stdin (the message), besides its error.
func TestJobsGetShowsARejectedJob(t *testing.T) {
	t.Parallel()
	srv := spooltest.NewServer(t)
	j, _, err := srv.Client().Submit(context.Background(), client.SubmitParams{Stdin: []byte("not a spec"), RejectReason: "message jobs/0@9 cannot become a job"})
	if err != nil {
		t.Fatal(err)
	}
	r := run(srv, "jobs", "get", j.ID)
	for _, want := range []string{"recorded as rejected, never run", `10 bytes: "not a spec"`, "message jobs/0@9 cannot become a job", "failed"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("jobs get does not say %q:\n%s", want, r.stdout)
		}
	}
}
