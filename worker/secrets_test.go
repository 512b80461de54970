package worker_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"strconv"
	"strings"
	"testing"

	"github.com/spool-run/spool"
)

// TestSecretsMaskedInOutput: a job gets its secret in its environment, and
// whatever it prints of it (the value, its base64, the base64 of a text it
// lies in, the value at the place where a line longer than a batch holds is
// cut, on stderr, on a terminal) is stored as "***"; the rest of the
// output is kept as it was printed.
func TestSecretsMaskedInOutput(t *testing.T) {
	t.Parallel()
	e := newEnv(t, 2, nil)
	const value = "hunter2-Sup3r/S3cret+value"
	cut := 256 << 10 // the default max_batch_bytes: longer lines are cut here
	script := `echo "plain: $DEPLOY_TOKEN."
printf %s "$DEPLOY_TOKEN" | base64
printf 'a%s' "$DEPLOY_TOKEN" | base64 -w0; echo
printf 'ab%s and more' "$DEPLOY_TOKEN" | base64 -w0; echo
head -c ` + strconv.Itoa(cut-7) + ` /dev/zero | tr '\0' y; printf '%s|end\n' "$DEPLOY_TOKEN"
printf %s "$DEPLOY_TOKEN" | sha256sum | cut -c1-64
echo "on stderr: $DEPLOY_TOKEN" >&2`
	s := sh(script)
	s.Secrets = map[string]string{"DEPLOY_TOKEN": value}
	id := e.submit(t, s)
	if j := e.wait(t, id); j.State != spool.Succeeded {
		t.Fatalf("job: %v", j.Result)
	}
	stdout, stderr := output(e.logOf(t, id))
	all := append(bytes.Clone(stdout), stderr...)
	for _, form := range []string{value, base64.StdEncoding.EncodeToString([]byte(value)), value[:12], "aHVudGVyMi1TdXAz"} {
		if bytes.Contains(all, []byte(form)) {
			t.Errorf("the stored output holds %q", form)
		}
	}
	lines := strings.Split(string(stdout), "\n")
	sum := sha256.Sum256([]byte(value))
	if len(lines) != 7 || lines[0] != "plain: ***." || lines[1] != "***" || !strings.HasPrefix(lines[2], "YW") ||
		lines[4] != strings.Repeat("y", cut-7)+"***|end" || lines[5] != hex.EncodeToString(sum[:]) {
		t.Fatalf("stdout stored as %q…%q", head(stdout), stdout[max(0, len(stdout)-300):])
	}
	if !strings.Contains(lines[2], "***") || !strings.Contains(lines[3], "***") {
		t.Fatalf("the base64 of texts holding the secret stored as %q and %q", lines[2], lines[3])
	}
	if string(stderr) != "on stderr: ***\n" {
		t.Fatalf("stderr stored as %q", stderr)
	}

	// On a terminal, the one stream is masked the same way.
	s = sh(`printf 'tty: %s\n' "$DEPLOY_TOKEN"`)
	s.PTY, s.Secrets = true, map[string]string{"DEPLOY_TOKEN": value}
	id = e.submit(t, s)
	e.wait(t, id)
	if out, _ := output(e.logOf(t, id)); string(out) != "tty: ***\n" {
		t.Fatalf("terminal output stored as %q", out)
	}
}
