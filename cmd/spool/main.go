// Command spool is a job runner with cheap, replayable, live output.
// Run `spool --help` for the commands.
package main

import (
	"os"

	"github.com/spool-run/spool/internal/cli"
)

func main() {
	os.Exit(cli.Main(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}
