package worker_test

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/spool-run/spool"
	"github.com/spool-run/spool/client"
)

// TestArtifactsCollected: the files a job's globs match are kept once the
// command ends, also when it fails, named by their path under the
// directory it ran in; a link pointing out of that directory is not
// followed (and said so); the job's output ends with what was kept; the job's exit code
// is its own.
func TestArtifactsCollected(t *testing.T) {
	t.Parallel()
	e := newEnv(t, 1, nil)
	outside := filepath.Join(t.TempDir(), "worker-secret.txt")
	if err := os.WriteFile(outside, []byte("the worker's, not the job's"), 0o600); err != nil {
		t.Fatal(err)
	}
	s := sh(`mkdir -p dist/deep/er && echo a > dist/a.txt && echo b > dist/deep/er/b.txt && echo r > report.html && echo x > other.log
ln -s ` + outside + ` dist/leak.txt
exit 3`)
	s.Artifacts = []string{"dist/**", "report.html", "nothing-*.zip"}
	id := e.submit(t, s)
	j := e.wait(t, id)
	if j.State != spool.Failed || j.Result == nil || j.Result.ExitCode != 3 {
		t.Fatalf("job ended %s %+v; want failed with its own exit code 3", j.State, j.Result)
	}
	list, err := e.c.ListArtifacts(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	var paths []string
	for _, a := range list {
		paths = append(paths, a.Path)
	}
	if want := []string{"dist/a.txt", "dist/deep/er/b.txt", "report.html"}; !slices.Equal(paths, want) {
		t.Fatalf("kept %v; want %v", paths, want)
	}
	rc, _, err := e.c.DownloadArtifact(context.Background(), id, "dist/deep/er/b.txt", 0, -1)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(rc)
	rc.Close()
	if string(b) != "b\n" {
		t.Fatalf("dist/deep/er/b.txt holds %q", b)
	}
	_, stderr := output(e.logOf(t, id))
	lines := strings.Split(strings.TrimSuffix(string(stderr), "\n"), "\n")
	if last := lines[len(lines)-1]; last != "uploaded 3 artifacts (6 bytes); 1 failed" {
		t.Fatalf("the output ends with %q; stderr:\n%s", last, stderr)
	}
	if !strings.Contains(string(stderr), "no file matches nothing-*.zip") || !strings.Contains(string(stderr), "dist/leak.txt not kept") {
		t.Fatalf("a glob that matched nothing is not said; stderr:\n%s", stderr)
	}
}

// TestJobTokenGivenAndMasked: the job's command gets the server's address
// and its job token; printed, the token is masked like a secret.
func TestJobTokenGivenAndMasked(t *testing.T) {
	t.Parallel()
	e := newEnv(t, 1, nil)
	id := e.submit(t, sh(`echo "server=$SPOOL_SERVER"; echo "token=$SPOOL_JOB_TOKEN"; exec sleep 60`))
	var token string
	for l, err := range e.c.Lines(context.Background(), id, client.StreamOptions{Follow: true}) {
		if err != nil {
			t.Fatal(err)
		}
		if strings.HasPrefix(l.Text, "token=") {
			token = strings.TrimPrefix(l.Text, "token=")
			break
		}
		if l.Text != "server="+e.srv.URL {
			t.Fatalf("the job was given %q", l.Text)
		}
	}
	if token != "***" {
		t.Fatalf("the job token is shown in the output as %q", token)
	}
	if _, err := e.c.Cancel(context.Background(), id, "done"); err != nil {
		t.Fatal(err)
	}
	e.wait(t, id)
}
