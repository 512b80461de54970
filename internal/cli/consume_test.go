package cli

import (
	"strings"
	"testing"

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
