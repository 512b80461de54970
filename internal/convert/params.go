package convert

import spoolv1 "github.com/spool-run/spool/gen/spool/v1"

// MaxParamBytes bounds what a job record carries of what a job runs:
// command, script, environment and inline stdin together. A client sends
// a larger stdin as an upload instead (params.stdin_upload).
const MaxParamBytes = 256 << 10

// ParamBytes is how much of MaxParamBytes p takes.
func ParamBytes(p *spoolv1.JobParams) int {
	size := len(p.GetScript()) + len(p.GetWorkingDir()) + len(p.GetRepositoryUrl()) + len(p.GetRef()) + len(p.GetStdin())
	for _, a := range p.GetArgv() {
		size += len(a)
	}
	for k, v := range p.GetEnv() {
		size += len(k) + len(v)
	}
	return size
}
