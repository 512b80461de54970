package cli

import (
	"context"
	"net"
	"slices"
	"strings"
	"testing"

	"github.com/spool-run/spool/client"
	"github.com/spool-run/spool/spooltest"
)

// TestCompletionScripts: each shell gets its script, and a shell spool
// has none for is refused.
func TestCompletionScripts(t *testing.T) {
	for shell, mark := range map[string]string{
		"bash":       "# bash completion V2 for spool",
		"zsh":        "#compdef spool",
		"fish":       "complete -c spool ",
		"powershell": "Register-ArgumentCompleter -CommandName 'spool'",
	} {
		r := runLocal("completion", shell)
		if r.code != 0 || !strings.Contains(r.stdout, mark) || !strings.Contains(r.stdout, "__complete") {
			t.Errorf("completion %s: exit %d, stderr %q, script starts %q", shell, r.code, r.stderr, head(r.stdout))
		}
	}
	wantRefusal(t, "completion tcsh", runLocal("completion", "tcsh"), `spool completion: "tcsh" is not one of bash, zsh, fish or powershell`)
	wantRefusal(t, "completion without a shell", runLocal("completion"), "give one of bash, zsh, fish or powershell: spool completion bash|zsh|fish|powershell")
}

// completions is what the shell hears back from `spool __complete ARGS`:
// the candidates (id and description) and the directive.
func completions(t *testing.T, r result) (ids, descs []string, directive string) {
	t.Helper()
	if r.code != 0 {
		t.Fatalf("__complete: exit %d: %s", r.code, r.stderr)
	}
	lines := strings.Split(strings.TrimSuffix(r.stdout, "\n"), "\n")
	for _, l := range lines[:len(lines)-1] {
		id, desc, _ := strings.Cut(l, "\t")
		ids, descs = append(ids, id), append(descs, desc)
	}
	return ids, descs, lines[len(lines)-1]
}

// TestJobIDCompletion: Tab after a command that takes a job offers the
// server's newest jobs with their commands, only the ones the command can
// use, never file names; and nothing at all, silently, without a server.
func TestJobIDCompletion(t *testing.T) {
	t.Parallel()
	srv := spooltest.NewServer(t)
	c := srv.Client()
	done := spooltest.RunJob(t, srv, spooltest.Line{Text: "hello"}).ID
	if _, _, err := c.Submit(context.Background(), client.SubmitParams{Script: "make test"}); err != nil {
		t.Fatal(err)
	}
	l := spooltest.LeaseJob(t, srv, "")
	l.Begin()
	running := l.JobID()
	queued, _, err := c.Submit(context.Background(), client.SubmitParams{Argv: []string{"make", "lint"}, Queue: "slow"})
	if err != nil {
		t.Fatal(err)
	}

	// ShellCompDirectiveNoFileComp|ShellCompDirectiveKeepOrder: newest
	// first, and no file names.
	const keepOrderNoFiles = ":36"
	ids, descs, directive := completions(t, run(srv, "__complete", "jobs", "get", ""))
	if want := []string{queued.ID, running, done}; !slices.Equal(ids, want) || directive != keepOrderNoFiles {
		t.Fatalf("jobs get: offered %q (%s), want %q (%s)", ids, directive, want, keepOrderNoFiles)
	}
	for i, want := range []string{"make lint (queued, ", "make test (running, ", "spooltest (succeeded, "} {
		if !strings.HasPrefix(descs[i], want) || !strings.HasSuffix(descs[i], " ago)") {
			t.Errorf("description of %s: %q, want it to start %q", ids[i], descs[i], want)
		}
	}

	for _, tc := range []struct {
		args []string
		want []string
	}{
		// Its subcommand comes first, then the jobs.
		{[]string{"logs", ""}, []string{"rebuild", queued.ID, running, done}},
		{[]string{"logs", "-f", ""}, []string{queued.ID, running, done}},
		{[]string{"monitor", "--fast", ""}, []string{queued.ID, running, done}},
		{[]string{"logs", "rebuild", ""}, []string{queued.ID, running, done}},
		{[]string{"jobs", "get", done[:len(done)-1]}, []string{done}},
		{[]string{"jobs", "cancel", ""}, []string{queued.ID, running}},
		{[]string{"submit", "--after", ""}, []string{queued.ID, running}},
		{[]string{"jobs", "wait", queued.ID, ""}, []string{running}},
		{[]string{"ingest", "complete", "--job", ""}, []string{running}},
		{[]string{"logs", done, ""}, nil},
	} {
		ids, _, directive := completions(t, run(srv, append([]string{"__complete"}, tc.args...)...))
		if !slices.Equal(ids, tc.want) || (directive != keepOrderNoFiles && directive != ":4") {
			t.Errorf("%q: offered %q (%s), want %q with no files", tc.args, ids, directive, tc.want)
		}
	}

	dead, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	url := "http://" + dead.Addr().String()
	dead.Close()
	r := runLocal("--server", url, "__complete", "jobs", "get", "")
	if r.code != 0 || r.stdout != keepOrderNoFiles+"\n" || strings.Contains(r.stderr, "spool:") || strings.Contains(r.stderr, "reach") {
		t.Fatalf("without a server: exit %d, stdout %q, stderr %q; want nothing offered and no error", r.code, r.stdout, r.stderr)
	}
}
