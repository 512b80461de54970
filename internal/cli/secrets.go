package cli

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"
)

// secretHelp is the help of --secret, on every command that makes jobs.
const secretHelp = "give the command a secret environment variable `NAME[=VALUE]` (repeatable): NAME alone takes its value from spool's own environment, NAME=VALUE gives it (visible in ps and shell history: prefer NAME). spool stores it encrypted, shows only its name (NAME=***), hands it only to the worker that runs the job, and masks it, and its base64, as *** in the job's output. 4 bytes to 32 KiB"

// secretFlags are --secret's values as given.
type secretFlags []string

func (f *secretFlags) register(cmd *cobra.Command) {
	cmd.Flags().StringArrayVar((*[]string)(f), "secret", nil, secretHelp)
}

// secrets reads the flags, taking a bare NAME's value from the environment
// (lookup is os.LookupEnv). Errors name the secret, never its value.
func (f secretFlags) secrets(lookup func(string) (string, bool)) (map[string]string, error) {
	if len(f) == 0 {
		return nil, nil
	}
	out := make(map[string]string, len(f))
	for _, s := range f {
		name, value, given := strings.Cut(s, "=")
		switch _, twice := out[name]; {
		case name == "":
			return nil, fmt.Errorf("--secret: give NAME (its value from the environment) or NAME=VALUE")
		case twice:
			return nil, fmt.Errorf("--secret %s is given twice", name)
		}
		if !given {
			v, ok := lookup(name)
			if !ok {
				return nil, fmt.Errorf("--secret %s: $%s is not set in spool's environment; export it, or give --secret %s=VALUE", name, name, name)
			}
			value = v
		}
		out[name] = value
	}
	return out, nil
}
