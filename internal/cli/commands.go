package cli

import (
	"fmt"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/spool-run/spool/internal/suggest"
)

// The command tree is checked as a whole once it is built, so every group
// and every command, including those added later, answers a mistake the
// same way: a word that is no command is refused with the nearest one (or
// the list), and a missing or extra argument is named with what to type.

// tidyCommands walks the tree under root and gives each command the
// treatment above; Tab completes every enum flag.
func tidyCommands(root *cobra.Command) {
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		if c.HasSubCommands() {
			tidyGroup(c)
		} else if c.Args != nil {
			c.Args = namedArgs(c.Args)
		}
		// Tab offers an enum flag's words.
		c.Flags().VisitAll(func(f *pflag.Flag) {
			if v, ok := f.Value.(*enumFlag); ok {
				_ = c.RegisterFlagCompletionFunc(f.Name, cobra.FixedCompletions(v.values, cobra.ShellCompDirectiveNoFileComp))
			}
		})
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
}

// tidyGroup makes a command with subcommands refuse a word that is none of
// them. Cobra only checks this for the root: a group without a run
// function of its own would print its help for `spool jobs lst` and exit
// 0, and a group with one would take the word as its argument.
func tidyGroup(c *cobra.Command) {
	// SuggestionsFor reads the distance from the group itself; cobra sets
	// it only on the root, and only while reporting the root's typo.
	c.SuggestionsMinimumDistance = 2
	ownRun := c.Runnable()
	if !ownRun {
		// A bare group shows what it has; a word after it must be one
		// of its commands.
		c.RunE = func(cmd *cobra.Command, _ []string) error { return cmd.Help() }
		c.Args = func(cmd *cobra.Command, args []string) error {
			if len(args) > 0 {
				return unknownCommand(cmd, args[0])
			}
			return nil
		}
	} else {
		own := c.Args
		c.Args = func(cmd *cobra.Command, args []string) error {
			// A near miss of a subcommand is a typo, not an argument:
			// `spool logs rebuld` is not the log of a job "rebuld".
			if len(args) > 0 && len(cmd.SuggestionsFor(args[0])) > 0 {
				return unknownCommand(cmd, args[0])
			}
			if own == nil {
				return nil
			}
			if err := own(cmd, args); err != nil {
				if len(args) > 0 && len(positionals(cmd)) == 0 {
					return unknownCommand(cmd, args[0])
				}
				return argsError(cmd, args, err)
			}
			return nil
		}
	}
	// `spool jobs lst --state x`: the group has no --state, and the flag
	// would be reported instead of the word that is no command. (A group
	// with arguments of its own, spool logs JOB_ID, reports its flag,
	// unless the word is a near miss of a command.) The function is
	// inherited: the group's commands report their flags as they are.
	c.SetFlagErrorFunc(func(cmd *cobra.Command, err error) error {
		args := cmd.Flags().Args()
		if cmd != c || len(args) == 0 || slices.ContainsFunc(cmd.Commands(), func(s *cobra.Command) bool { return s.Name() == args[0] || s.HasAlias(args[0]) }) {
			return err
		}
		if !ownRun || len(closestCommands(cmd, args[0])) > 0 {
			return unknownCommand(cmd, args[0])
		}
		return err
	})
}

// unknownCommand refuses word as a command of group c, naming the nearest
// ones, or all of them when none is near.
func unknownCommand(c *cobra.Command, word string) error {
	msg := fmt.Sprintf("unknown command %q for %q", word, c.CommandPath())
	if near := closestCommands(c, word); len(near) > 0 {
		return fmt.Errorf("%s; did you mean %s?", msg, orList(near))
	}
	// `spool wait` is spool jobs wait: a command one level down.
	var deeper, names []string
	for _, s := range c.Commands() {
		if !s.IsAvailableCommand() {
			continue
		}
		names = append(names, s.Name())
		for _, sub := range s.Commands() {
			if sub.IsAvailableCommand() && sub.Name() == word {
				deeper = append(deeper, sub.CommandPath())
			}
		}
	}
	if len(deeper) > 0 {
		return fmt.Errorf("%s; did you mean %s?", msg, orList(deeper))
	}
	return fmt.Errorf("%s; its commands are %s (%s --help says what each does)", msg, listOf(names, "and"), c.CommandPath())
}

// closestCommands are the commands of c that cobra finds near word,
// only the nearest of them: "lst" is list, though get is two edits away.
func closestCommands(c *cobra.Command, word string) []string {
	near := c.SuggestionsFor(word)
	best := -1
	var out []string
	for _, n := range near {
		d := suggest.Distance(strings.ToLower(word), n)
		if strings.HasPrefix(n, strings.ToLower(word)) {
			d = 0 // a prefix of the name is as near as it gets
		}
		switch {
		case best < 0 || d < best:
			best, out = d, []string{n}
		case d == best:
			out = append(out, n)
		}
	}
	return out
}

// orList is "a", "a or b", "a, b or c".
func orList(words []string) string { return listOf(words, "or") }

// listOf joins words as a sentence does, with conj before the last.
func listOf(words []string, conj string) string {
	if len(words) < 2 {
		return strings.Join(words, "")
	}
	return strings.Join(words[:len(words)-1], ", ") + " " + conj + " " + words[len(words)-1]
}

// namedArgs wraps a command's argument check so its refusal names what is
// missing or extra in the words of its usage line ("give a job id")
// rather than cobra's "accepts 1 arg(s), received 0".
func namedArgs(own cobra.PositionalArgs) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if err := own(cmd, args); err != nil {
			return argsError(cmd, args, err)
		}
		return nil
	}
}

// argsError says what is wrong with args, given that cmd's check refused
// them with err: a missing argument is named, extra ones are shown. A
// usage line that does not read as a plain list of placeholders leaves err
// as the command's own check wrote it.
func argsError(cmd *cobra.Command, args []string, err error) error {
	if len(cmd.ValidArgs) > 0 {
		if len(args) == 0 {
			return fmt.Errorf("give one of %s: %s %s", orList(cmd.ValidArgs), cmd.Parent().CommandPath(), cmd.Use)
		}
		for _, a := range args {
			if !slices.Contains(cmd.ValidArgs, a) {
				return fmt.Errorf("%s: %s", cmd.CommandPath(), notOneOf(a, cmd.ValidArgs))
			}
		}
	}
	want := positionals(cmd)
	if want == nil {
		return err
	}
	usage := cmd.CommandPath()
	for _, p := range want {
		usage += " " + p
	}
	if len(want) == 0 {
		return fmt.Errorf("%s takes no arguments, got %s (%s --help lists its flags)", cmd.CommandPath(), quoteAll(args), cmd.CommandPath())
	}
	last := want[len(want)-1]
	many := strings.HasSuffix(last, "...")
	if len(args) < len(want) {
		return fmt.Errorf("give %s: %s", placeholderNoun(want[len(args)]), usage)
	}
	if !many && len(args) > len(want) {
		return fmt.Errorf("%s takes %s, got %d: %s (usage: %s)", cmd.CommandPath(), countNouns(want), len(args), quoteAll(args), usage)
	}
	return err
}

// positionals are the required argument placeholders of cmd's usage line
// ("get JOB_ID" has JOB_ID; "wait [flags] JOB_ID..." has JOB_ID...), an
// empty list when it takes none, or nil when the line is not a plain list
// (alternatives with "|", a command after "--").
func positionals(cmd *cobra.Command) []string {
	words := strings.Fields(cmd.Use)
	if len(words) == 0 {
		return nil
	}
	out := []string{}
	depth := 0
	for i := 1; i < len(words); i++ {
		w := words[i]
		open := depth > 0 || strings.HasPrefix(w, "[")
		depth += strings.Count(w, "[") - strings.Count(w, "]")
		switch {
		case open:
			// Optional: nothing is missing without it.
		case strings.Contains(w, "|") || w == "--":
			return nil
		case strings.HasPrefix(w, "-"):
			// A flag and its value's placeholder.
			if i+1 < len(words) && !strings.HasPrefix(words[i+1], "-") && !strings.HasPrefix(words[i+1], "[") {
				i++
			}
		case strings.ToUpper(w) == w:
			out = append(out, w)
		default:
			return nil
		}
	}
	return out
}

// placeholderNoun is what a placeholder asks for, for people: JOB_ID is
// "a job id", QUEUE "a queue", JOB_ID... "one or more job ids".
func placeholderNoun(p string) string {
	base, many := strings.CutSuffix(p, "...")
	noun := strings.ToLower(strings.ReplaceAll(base, "_", " "))
	if many {
		return "one or more " + noun + "s"
	}
	if strings.ContainsRune("aeiou", rune(noun[0])) {
		return "an " + noun
	}
	return "a " + noun
}

// countNouns says how many arguments want asks for: "one job id", "a queue
// and a name".
func countNouns(want []string) string {
	if len(want) == 1 {
		n := placeholderNoun(want[0])
		if rest, ok := strings.CutPrefix(n, "a "); ok {
			return "one " + rest
		}
		if rest, ok := strings.CutPrefix(n, "an "); ok {
			return "one " + rest
		}
		return n
	}
	nouns := make([]string, len(want))
	for i, p := range want {
		nouns[i] = placeholderNoun(p)
	}
	return listOf(nouns, "and")
}

// quoteAll shows arguments as they were given.
func quoteAll(args []string) string {
	q := make([]string, len(args))
	for i, a := range args {
		q[i] = fmt.Sprintf("%q", a)
	}
	return strings.Join(q, " ")
}
