package cli

import (
	"slices"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// allCommands is every command of spool's tree, the root first.
func allCommands() []*cobra.Command {
	var out []*cobra.Command
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		out = append(out, c)
		for _, s := range c.Commands() {
			walk(s)
		}
	}
	walk(newRoot(&env{}))
	return out
}

// words is a command's path without "spool", as arguments.
func words(c *cobra.Command) []string { return strings.Fields(c.CommandPath())[1:] }

// TestMistypedSubcommand: a word that is no command of a group is refused
// with exit 1 and the command meant, for every group (the root too), as
// for the root; a bare group shows its help.
func TestMistypedSubcommand(t *testing.T) {
	t.Parallel()
	for args, want := range map[string]string{
		"jobs lst":                    `unknown command "lst" for "spool jobs"; did you mean list?`,
		"keys lst":                    `unknown command "lst" for "spool keys"; did you mean list?`,
		"scatters lst":                `unknown command "lst" for "spool scatters"; did you mean list?`,
		"jobz":                        `unknown command "jobz" for "spool"; did you mean jobs?`,
		"wait":                        `unknown command "wait" for "spool"; did you mean spool jobs wait?`,
		"logs rebuld":                 `unknown command "rebuld" for "spool logs"; did you mean rebuild?`,
		"jobs lst --state running":    `unknown command "lst" for "spool jobs"; did you mean list?`,
		"queues frob":                 `unknown command "frob" for "spool queues"; its commands are pause, resume and set (spool queues --help says what each does)`,
		"scatters frobnicate --limit": `unknown command "frobnicate" for "spool scatters"; its commands are cancel, get, list and redrive (spool scatters --help says what each does)`,
	} {
		wantRefusal(t, args, runLocal(strings.Fields(args)...), want)
	}
	groups := 0
	for _, c := range allCommands() {
		subs := slices.DeleteFunc(c.Commands(), func(s *cobra.Command) bool { return !s.IsAvailableCommand() })
		if len(subs) == 0 {
			continue
		}
		groups++
		for _, s := range subs {
			// One letter dropped: "list" is "lst".
			typo := s.Name()[:1] + s.Name()[2:]
			r := runLocal(append(words(c), typo)...)
			if r.code != 1 || !strings.Contains(r.stderr, "did you mean") || !strings.Contains(r.stderr, s.Name()) {
				t.Errorf("%s %s: exit %d, stderr %q; want exit 1 and a suggestion of %s", c.CommandPath(), typo, r.code, r.stderr, s.Name())
			}
		}
	}
	if groups < 8 {
		t.Fatalf("found %d groups; the walk missed some", groups)
	}
	for _, group := range []string{"jobs", "keys", "scatters", "aws", "ingest"} {
		r := runLocal(group)
		if r.code != 0 || !strings.Contains(r.stdout, "Available Commands:") {
			t.Errorf("%s alone: exit %d, stdout %q; want its help and exit 0", group, r.code, head(r.stdout))
		}
	}
}

// TestMissingArguments: a command given too few or too many arguments
// says what to give in its usage line's words, for every command whose
// usage line is a list of placeholders.
func TestMissingArguments(t *testing.T) {
	t.Parallel()
	wantRefusal(t, "jobs get", runLocal("jobs", "get"), "give a job id: spool jobs get JOB_ID")
	wantRefusal(t, "jobs get a b", runLocal("jobs", "get", "a", "b"), `spool jobs get takes one job id, got 2: "a" "b" (usage: spool jobs get JOB_ID)`)
	wantRefusal(t, "jobs delete", runLocal("jobs", "delete"), "give one or more job ids: spool jobs delete JOB_ID...")
	wantRefusal(t, "queues pause", runLocal("queues", "pause"), "give a queue: spool queues pause QUEUE")
	wantRefusal(t, "jobs list x", runLocal("jobs", "list", "x"), `spool jobs list takes no arguments, got "x" (spool jobs list --help lists its flags)`)
	wantRefusal(t, "completion bsh", runLocal("completion", "bsh"), `spool completion: "bsh" is not one of bash, zsh, fish or powershell`)
	checked := 0
	for _, c := range allCommands() {
		want := positionals(c)
		if len(want) == 0 || c.Args == nil {
			continue
		}
		checked++
		r := runLocal(words(c)...)
		if r.code != 1 || !strings.HasPrefix(r.stderr, "spool: give "+placeholderNoun(want[0])+": "+c.CommandPath()+" ") {
			t.Errorf("%s without arguments: exit %d, stderr %q; want it to ask for %s", c.CommandPath(), r.code, r.stderr, placeholderNoun(want[0]))
		}
	}
	if checked < 10 {
		t.Fatalf("checked %d commands; the walk missed some", checked)
	}
}

// TestEnumFlags: every flag that takes one of a few words refuses another
// with the list, and with the word meant when it is a typo.
func TestEnumFlags(t *testing.T) {
	t.Parallel()
	wantRefusal(t, "--state runing", runLocal("jobs", "list", "--state", "runing"),
		`invalid argument "runing" for "--state" flag: "runing" is not one of scheduled, queued, running, succeeded, failed or cancelled; did you mean running?`)
	wantRefusal(t, "--state queued,runing", runLocal("jobs", "list", "--state", "queued,runing"),
		`invalid argument "queued,runing" for "--state" flag: "runing" is not one of scheduled, queued, running, succeeded, failed or cancelled; did you mean running?`)
	found := 0
	for _, c := range allCommands() {
		c.LocalFlags().VisitAll(func(f *pflag.Flag) {
			v, ok := f.Value.(*enumFlag)
			if !ok {
				return
			}
			found++
			args := append(words(c), "--"+f.Name, "zzzz")
			if c.Name() == "consume" {
				args = append(args, "--brokers", "k:9092", "--topic", "t")
			}
			r := runLocal(args...)
			want := `invalid argument "zzzz" for "--` + f.Name + `" flag: "zzzz" is not one of ` + orList(v.values)
			if r.code != 1 || r.stderr != "spool: "+want+"\n" {
				t.Errorf("%s --%s zzzz: exit %d, stderr %q; want %q", c.CommandPath(), f.Name, r.code, r.stderr, want)
			}
		})
	}
	// --state, --start-at, --items-format, and --log-level and
	// --log-format of both worker and consume.
	if found < 7 {
		t.Fatalf("found %d enum flags; some flag of fixed words is not one", found)
	}
}

// TestHelpDefaults: no flag's help says its default twice, as
// "(default: the server's lease) (default 0s)" did.
func TestHelpDefaults(t *testing.T) {
	t.Parallel()
	for _, c := range allCommands() {
		for line := range strings.SplitSeq(c.LocalFlags().FlagUsages(), "\n") {
			if strings.Count(line, "(default") > 1 {
				t.Errorf("%s: %s", c.CommandPath(), strings.TrimSpace(line))
			}
		}
	}
	r := runLocal("worker", "--help")
	if !strings.Contains(r.stdout, "(default: the server's lease)\n") {
		t.Errorf("spool worker --help does not end --lease's line with its default:\n%s", r.stdout)
	}
}
