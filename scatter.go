package spool

import (
	"strings"

	"google.golang.org/protobuf/proto"

	spoolv1 "github.com/spool-run/spool/gen/spool/v1"
)

// MaxResultBytes bounds the JSON document a job may leave in the file named
// by $SPOOL_RESULT (a scatter batch's result): the same 256 KiB AWS Step
// Functions allows a state's output.
const MaxResultBytes = 256 << 10

// ScatterStateName is a scatter state's short lower-case name
// ("gathering"), the one the command line, the REST API and the logs use.
func ScatterStateName(s spoolv1.ScatterState) string {
	n := strings.TrimPrefix(s.String(), "SCATTER_STATE_")
	return strings.ToLower(n)
}

// ScatterIsFinal reports whether a scatter in state s is over: succeeded,
// failed or cancelled.
func ScatterIsFinal(s spoolv1.ScatterState) bool {
	switch s {
	case spoolv1.ScatterState_SCATTER_STATE_SUCCEEDED, spoolv1.ScatterState_SCATTER_STATE_FAILED, spoolv1.ScatterState_SCATTER_STATE_CANCELLED:
		return true
	}
	return false
}

// GatherParams is what the gather of a scatter whose batches run batch
// runs: script, with /bin/sh -c, in the batches' place (working directory,
// repository and ref), with their environment and timeout.
func GatherParams(batch *spoolv1.JobParams, script string) *spoolv1.JobParams {
	g := proto.Clone(batch).(*spoolv1.JobParams)
	g.Argv, g.Script, g.Scatter = nil, script, nil
	return g
}
