package spool_test

import (
	"fmt"

	"github.com/spool-run/spool"
	spoolv1 "github.com/spool-run/spool/gen/spool/v1"
)

// The gather of a scatter runs where its batches run.
func ExampleGatherParams() {
	batch := &spoolv1.JobParams{Argv: []string{"./resize.sh"}, WorkingDir: "photos", Env: map[string]string{"WIDTH": "800"}}
	g := spool.GatherParams(batch, `jq -s . > summary.json`)
	fmt.Printf("%q in %s with WIDTH=%s\n", g.GetScript(), g.GetWorkingDir(), g.GetEnv()["WIDTH"])
	// Output: "jq -s . > summary.json" in photos with WIDTH=800
}

func ExampleScatterStateName() {
	fmt.Println(spool.ScatterStateName(spoolv1.ScatterState_SCATTER_STATE_GATHERING), spool.ScatterIsFinal(spoolv1.ScatterState_SCATTER_STATE_GATHERING))
	// Output: gathering false
}
