package cli

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/spool-run/spool"
	"github.com/spool-run/spool/client"
	"github.com/spool-run/spool/internal/termview"
)

func newCompletionCmd(e *env) *cobra.Command {
	var cfg completionConfig
	return &cobra.Command{
		Use:   "completion bash|zsh|fish|powershell",
		Short: "Print a script that makes your shell complete spool's commands, flags and job ids",
		Long: `Print the completion script for your shell. Once it is loaded, Tab completes
spool's commands and flags, and job ids too: wherever a command takes a job
(spool logs, monitor, jobs get, cancel and wait, ...), Tab offers the newest 50
jobs of the server, each with its command. The ids come from the server that
--server or SPOOL_SERVER names, with the key in SPOOL_API_KEY (or the local
admin key), so set those in your shell's profile. When the server cannot be
reached, Tab offers nothing.

bash (needs the bash-completion package):
  this shell only:  source <(spool completion bash)
  every shell:      spool completion bash > ~/.local/share/bash-completion/completions/spool

zsh (completion must be on: autoload -U compinit; compinit in ~/.zshrc):
  this shell only:  source <(spool completion zsh)
  every shell:      spool completion zsh > "${fpath[1]}/_spool"

fish:
  this shell only:  spool completion fish | source
  every shell:      spool completion fish > ~/.config/fish/completions/spool.fish

PowerShell:
  this shell only:  spool completion powershell | Out-String | Invoke-Expression
  every shell:      add that line to $PROFILE

Start a new shell after installing for every shell.`,
		ValidArgs: []string{"bash", "zsh", "fish", "powershell"},
		Args:      cobra.MatchAll(cobra.ExactArgs(1), cobra.OnlyValidArgs),
		RunE: func(cmd *cobra.Command, args []string) error {
			cfg.shell, cfg.root = args[0], cmd.Root()
			return runCompletion(cmd.Context(), cfg, e)
		},
	}
}

// completionConfig is what `spool completion` is told on its command line.
type completionConfig struct {
	shell string
	root  *cobra.Command // whose commands and flags the script completes
}

func runCompletion(ctx context.Context, cfg completionConfig, e *env) error {
	root := cfg.root
	switch cfg.shell {
	case "bash":
		return root.GenBashCompletionV2(e.out, true)
	case "zsh":
		return root.GenZshCompletion(e.out)
	case "fish":
		return root.GenFishCompletion(e.out, true)
	default:
		return root.GenPowerShellCompletionWithDesc(e.out)
	}
}

// How many jobs Tab offers, and how long it waits for the server: the
// person is waiting at the prompt, and an answer that comes late is worse
// than none.
const (
	completionJobs    = 50
	completionTimeout = 2 * time.Second
)

// activeStates are the states a job can still be cancelled or waited for
// in: Tab offers those jobs only, where a finished one would be useless.
var activeStates = []spool.State{spool.Scheduled, spool.Queued, spool.Running}

// finalStates are the states a job can be rerun or deleted in.
var finalStates = []spool.State{spool.Succeeded, spool.Failed, spool.Cancelled}

// completeJobArg completes the JOB_ID argument of a command that takes one
// job (or, with many, several different ones), among jobs in states (none:
// any). File names are never offered: no command takes one there.
func completeJobArg(e *env, many bool, states ...spool.State) cobra.CompletionFunc {
	return func(cmd *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
		if len(args) > 0 && !many {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		return jobCompletions(cmd.Context(), e, toComplete, args, states)
	}
}

// completeJobFlag completes a flag whose value is a job id.
func completeJobFlag(e *env, states ...spool.State) cobra.CompletionFunc {
	return func(cmd *cobra.Command, _ []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
		return jobCompletions(cmd.Context(), e, toComplete, nil, states)
	}
}

// jobCompletions lists the newest jobs whose ids start with prefix, leaving
// out those already on the command line, newest first (the shell keeps the
// order), each described by its command, state and age. Any failure (no
// server, a refused key, too slow) offers nothing and says nothing: an
// error has no good place in the middle of a command being typed, and
// running the command will explain it.
func jobCompletions(ctx context.Context, e *env, prefix string, given []string, states []spool.State) ([]cobra.Completion, cobra.ShellCompDirective) {
	const directive = cobra.ShellCompDirectiveNoFileComp | cobra.ShellCompDirectiveKeepOrder
	ctx, cancel := context.WithTimeout(ctx, completionTimeout)
	defer cancel()
	c, err := e.clientNow()
	if err != nil {
		return nil, directive
	}
	jobs, _, err := c.JobsPage(ctx, client.ListParams{PageSize: completionJobs, States: states})
	if err != nil {
		return nil, directive
	}
	now := time.Now()
	var out []cobra.Completion
	for _, j := range jobs {
		id := j.ID
		if !strings.HasPrefix(id, prefix) || slices.Contains(given, id) {
			continue
		}
		what := strings.ReplaceAll(termview.Truncate(commandLine(j.Params), 60), "\t", " ")
		out = append(out, cobra.CompletionWithDesc(id, fmt.Sprintf("%s (%s, %s)", what, j.State.String(), ago(j.CreatedAt, now))))
	}
	return out, directive
}
