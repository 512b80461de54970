package cli

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spool-run/spool/internal/store/backends/awsstore/awstest"
)

// TestAWSInit: `spool aws init` creates the tables and queues store.aws
// names, says so, and finds them in place when run again.
func TestAWSInit(t *testing.T) {
	servers := awstest.Start(t)
	name := fmt.Sprintf("cli%d", os.Getpid())
	cfg := filepath.Join(t.TempDir(), "spool.yaml")
	yaml := fmt.Sprintf(`store:
  type: aws
  aws:
    dynamodb_endpoint: %s
    sqs_endpoint: %s
    jobs_table: %s-jobs
    events_table: %s-events
    queue_prefix: %s-
    queue_names: [default, builds]
`, servers.DynamoDB, servers.SQS, name, name, name)
	if err := os.WriteFile(cfg, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	initAWS := func(path string) (int, string, string) {
		var out, errOut bytes.Buffer
		code := Main([]string{"aws", "init", "--config", path}, strings.NewReader(""), &out, &errOut)
		return code, out.String(), errOut.String()
	}
	code, out, errOut := initAWS(cfg)
	if code != 0 {
		t.Fatalf("first run: exit %d\n%s%s", code, out, errOut)
	}
	for _, want := range []string{name + "-jobs", name + "-events", name + "-builds", name + "-builds-dlq", "created"} {
		if !strings.Contains(out, want) {
			t.Fatalf("first run does not mention %q:\n%s", want, out)
		}
	}
	code, out, errOut = initAWS(cfg)
	if code != 0 || strings.Contains(out, "created") || !strings.Contains(out, "exists") {
		t.Fatalf("second run: exit %d, want everything to exist already:\n%s%s", code, out, errOut)
	}

	// A bad setting is refused with its name, before anything is touched.
	bad := filepath.Join(t.TempDir(), "bad.yaml")
	if err := os.WriteFile(bad, []byte("store:\n  aws:\n    jobs_table: x\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if code, _, errOut := initAWS(bad); code == 0 || !strings.Contains(errOut, "store.aws.jobs_table") {
		t.Fatalf("bad table name: exit %d, %q", code, errOut)
	}
}

// TestAWSInitNoCredentials: without AWS credentials, spool aws init says
// where the SDK looked for them, not only what its last source answered.
func TestAWSInitNoCredentials(t *testing.T) {
	home := t.TempDir()
	for k, v := range map[string]string{"HOME": home, "AWS_ACCESS_KEY_ID": "", "AWS_SECRET_ACCESS_KEY": "", "AWS_PROFILE": "",
		"AWS_SHARED_CREDENTIALS_FILE": "", "AWS_CONFIG_FILE": "", "AWS_WEB_IDENTITY_TOKEN_FILE": "",
		"AWS_CONTAINER_CREDENTIALS_RELATIVE_URI": "", "AWS_CONTAINER_CREDENTIALS_FULL_URI": "",
		"AWS_EC2_METADATA_DISABLED": "true", "SPOOL_STORE_AWS_REGION": "eu-west-1"} {
		t.Setenv(k, v)
	}
	r := runLocal("aws", "init")
	want := "spool: setting up AWS: no AWS credentials: the AWS SDK looked in the environment (AWS_ACCESS_KEY_ID unset), the shared files " +
		filepath.Join(home, ".aws", "credentials") + " (not there) and " + filepath.Join(home, ".aws", "config") + ` (not there) for profile "default" (AWS_PROFILE), ` +
		"a web identity token (AWS_WEB_IDENTITY_TOKEN_FILE unset), the ECS container endpoint (AWS_CONTAINER_CREDENTIALS_RELATIVE_URI and AWS_CONTAINER_CREDENTIALS_FULL_URI unset) " +
		"and the EC2 instance's role (instance metadata), off by AWS_EC2_METADATA_DISABLED: give it credentials in one of them"
	if r.code != 1 || !strings.HasPrefix(r.stderr, want) || r.stdout != "" {
		t.Fatalf("exit %d, stdout %q, stderr %q; want exit 1 and stderr starting %q", r.code, r.stdout, r.stderr, want)
	}
}
