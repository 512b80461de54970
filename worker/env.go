package worker

import (
	"path"
	"slices"
	"strconv"
	"strings"

	spoolv1 "github.com/spool-run/spool/gen/spool/v1"
)

// DefaultPassEnv returns the names of the worker's environment variables
// a job gets without being told (a name ending in * stands for every
// variable with that prefix): what programs need to find themselves and
// speak the user's language. The rest of the worker's environment (cloud
// credentials, the server's keys) stays with the worker, since a job's
// output is readable by anyone who may read jobs. Config.PassEnv adds to
// them. The slice is the caller's: changing it changes nothing else.
func DefaultPassEnv() []string { return slices.Clone(defaultPassEnv) }

var defaultPassEnv = []string{"PATH", "HOME", "USER", "LOGNAME", "SHELL", "LANG", "LANGUAGE", "LC_*", "TZ", "TERM", "TMPDIR"}

// terminalType is TERM for a job on a pseudo-terminal when the worker has
// none to pass on (a worker started by systemd has none): a terminal most
// programs know to be able to colour.
const terminalType = "xterm-256color"

// jobEnv is a job's environment: the worker's variables that pass (the
// defaults and Config.PassEnv; a name may end in * to pass every variable
// with that prefix), then spool's own, then the job's. A job on a
// pseudo-terminal gets a TERM if the worker passed it none.
func jobEnv(worker []string, pass []string, job *spoolv1.Job) []string {
	var env []string
	term := false
	for _, kv := range worker {
		name, value, _ := strings.Cut(kv, "=")
		if passes(name, defaultPassEnv) || passes(name, pass) {
			env = append(env, kv)
			term = term || (name == "TERM" && value != "")
		}
	}
	if job.GetParams().GetPty() && !term {
		// Programs look at TERM before they colour: without it, many
		// treat the terminal as one that cannot.
		env = append(env, "TERM="+terminalType)
	}
	env = append(env,
		"SPOOL_JOB_ID="+job.GetJobId(),
		"SPOOL_JOB_ATTEMPT="+strconv.Itoa(int(job.GetAttempt())),
		"SPOOL_QUEUE="+job.GetQueue(),
	)
	for k, v := range job.GetParams().GetEnv() {
		env = append(env, k+"="+v)
	}
	return env
}

func passes(name string, patterns []string) bool {
	for _, p := range patterns {
		if ok, _ := path.Match(p, name); ok {
			return true
		}
	}
	return false
}
