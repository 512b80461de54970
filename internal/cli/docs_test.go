package cli

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestDocumentedCommandsParse reads every spool command shown in a shell
// block of the README and docs/, and has the command line parse it as it
// would when run: the command exists, every flag is one it takes, its
// arguments are as many as it accepts. When a command or flag is renamed,
// the pages that show it fail here instead of misleading a reader.
func TestDocumentedCommandsParse(t *testing.T) {
	pages, err := filepath.Glob("../../docs/*.md")
	if err != nil {
		t.Fatal(err)
	}
	pages = append([]string{"../../README.md"}, pages...)
	seen := 0
	for _, page := range pages {
		for _, c := range shellCommands(t, page) {
			seen++
			if err := parseLike(c.args); err != nil {
				t.Errorf("%s:%d: spool %s\n\t%v", page, c.line, strings.Join(c.args, " "), err)
			}
		}
	}
	t.Logf("%d spool commands parsed", seen)
	if seen < 40 {
		t.Errorf("found only %d spool commands in the README and docs/: has the way they are shown changed?", seen)
	}
}

func TestDocumentedCommandsParseCatchesAMistake(t *testing.T) {
	for _, args := range [][]string{{"submitt", "--", "true"}, {"submit", "--no-such-flag", "--", "true"}, {"jobs", "get"}} {
		if err := parseLike(args); err == nil {
			t.Errorf("spool %s parsed; want an error", strings.Join(args, " "))
		}
	}
}

// parseLike parses args as `spool ARGS` would, without running anything.
func parseLike(args []string) error {
	root := newRoot(&env{in: strings.NewReader(""), out: io.Discard, errOut: io.Discard})
	cmd, rest, err := root.Find(args)
	if err != nil {
		return err
	}
	if err := cmd.ParseFlags(rest); err != nil {
		return err
	}
	if cmd.Runnable() && cmd.Args != nil {
		return cmd.ValidateArgs(cmd.Flags().Args())
	}
	if !cmd.Runnable() && len(cmd.Flags().Args()) > 0 {
		return fmt.Errorf("%s has no command %q", cmd.CommandPath(), cmd.Flags().Args()[0])
	}
	return nil
}

// shellCommand is a spool command line shown in a page.
type shellCommand struct {
	line int
	args []string
}

// shellCommands are the spool commands of page's sh blocks: lines that run
// `spool` or `bin/spool` (after any VAR=value), joined where they end in a
// backslash, cut at a comment or a pipe or redirection.
// errUnclosedQuote is a line that ends inside a quoted argument.
var errUnclosedQuote = errors.New("unclosed quote")

func shellCommands(t *testing.T, page string) []shellCommand {
	t.Helper()
	f, err := os.Open(page)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var (
		out     []shellCommand
		inShell bool
		pending string
		start   int
	)
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		if strings.HasPrefix(line, "```") {
			if inShell && pending != "" {
				t.Errorf("%s:%d: the block ends inside a command: %s", page, start, pending)
				pending = ""
			}
			inShell = line == "```sh" || line == "```bash"
			continue
		}
		if !inShell {
			continue
		}
		if pending == "" {
			start = n
		}
		if s, ok := strings.CutSuffix(strings.TrimRight(line, " "), `\`); ok {
			pending += s + " "
			continue
		}
		words, err := shellWords(pending + line)
		if errors.Is(err, errUnclosedQuote) {
			// A quoted argument (a JSON body) goes on to the next line.
			pending += line + "\n"
			continue
		}
		pending = ""
		if err != nil {
			t.Errorf("%s:%d: %v", page, start, err)
			continue
		}
		for len(words) > 0 && strings.Contains(words[0], "=") && !strings.HasPrefix(words[0], "-") {
			words = words[1:] // VAR=value before the command
		}
		if len(words) == 0 || (words[0] != "spool" && words[0] != "bin/spool") {
			continue
		}
		out = append(out, shellCommand{line: start, args: words[1:]})
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// shellWords splits a line as a POSIX shell would for the cases the pages
// use: single and double quotes, a comment after blank space, and the end of
// the command at a pipe, redirection or list operator. Variables stay as
// written: their values do not matter to parsing.
func shellWords(line string) ([]string, error) {
	var (
		words []string
		cur   strings.Builder
		inCur bool
		quote rune
	)
	flush := func() {
		if inCur {
			words = append(words, cur.String())
		}
		cur.Reset()
		inCur = false
	}
	for _, r := range line {
		switch {
		case quote != 0:
			if r == quote {
				quote = 0
			} else {
				cur.WriteRune(r)
			}
		case r == '\'' || r == '"':
			quote, inCur = r, true
		case r == ' ' || r == '\t':
			flush()
		case r == '#' && !inCur:
			flush()
			return words, nil
		case strings.ContainsRune("|<>;&", r):
			flush()
			return words, nil
		default:
			cur.WriteRune(r)
			inCur = true
		}
	}
	if quote != 0 {
		return nil, fmt.Errorf("%w in %s", errUnclosedQuote, line)
	}
	flush()
	return words, nil
}
