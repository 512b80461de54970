package scatterjob

import (
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/durationpb"

	spoolv1 "github.com/spool-run/spool/gen/spool/v1"
)

// The gather runs its script where the batches run, with their environment
// and timeout, and is no batch itself.
func TestGatherParams(t *testing.T) {
	batch := &spoolv1.JobParams{Argv: []string{"./resize.sh"}, WorkingDir: "photos", Env: map[string]string{"WIDTH": "800"},
		Timeout: durationpb.New(time.Minute), RepositoryUrl: "https://example.com/r.git", Ref: "v1",
		Scatter: &spoolv1.ScatterMember{ScatterId: "s", BatchIndex: 3}}
	g := GatherParams(batch, "jq -s . > summary.json")
	if g.GetScript() != "jq -s . > summary.json" || g.GetArgv() != nil || g.GetScatter() != nil {
		t.Fatalf("gather runs %q / %q as %v", g.GetScript(), g.GetArgv(), g.GetScatter())
	}
	if g.GetWorkingDir() != "photos" || g.GetEnv()["WIDTH"] != "800" || g.GetTimeout().AsDuration() != time.Minute ||
		g.GetRepositoryUrl() != batch.GetRepositoryUrl() || g.GetRef() != "v1" {
		t.Fatalf("gather runs elsewhere: %v", g)
	}
	if batch.GetArgv() == nil || batch.GetScatter() == nil {
		t.Fatal("the batch's params were changed")
	}
}
