// Package scatterjob holds what the client, the worker and the server agree
// on about a scatter's jobs: what its gather runs, and how large a result a
// batch may leave.
package scatterjob

import (
	"google.golang.org/protobuf/proto"

	spoolv1 "github.com/spool-run/spool/gen/spool/v1"
)

// MaxResultBytes bounds the JSON document a job may leave in the file named
// by $SPOOL_RESULT (a scatter batch's result): the same 256 KiB AWS Step
// Functions allows a state's output.
const MaxResultBytes = 256 << 10

// GatherParams is what the gather of a scatter whose batches run batch
// runs: script, with /bin/sh -c, in the batches' place (working directory,
// repository and ref), with their environment and timeout.
func GatherParams(batch *spoolv1.JobParams, script string) *spoolv1.JobParams {
	g := proto.Clone(batch).(*spoolv1.JobParams)
	g.Argv, g.Script, g.Scatter = nil, script, nil
	return g
}
