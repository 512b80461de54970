package sqlrows_test

import (
	"slices"
	"strconv"
	"strings"
	"testing"

	spoolv1 "github.com/spool-run/spool/gen/spool/v1"
	"github.com/spool-run/spool/internal/convert"
	"github.com/spool-run/spool/internal/store/backends/sqlrows"
)

// FinalStates, which the migrations' partial index jobs_ended repeats as
// "3, 4, 5", are the states spool calls final, no more, no fewer.
func TestFinalStates(t *testing.T) {
	var want []int
	for v := range spoolv1.JobState_name {
		if convert.State(spoolv1.JobState(v)).IsFinal() {
			want = append(want, int(v))
		}
	}
	slices.Sort(want)
	var got []int
	for _, s := range strings.Split(sqlrows.FinalStates, ", ") {
		n, err := strconv.Atoi(s)
		if err != nil {
			t.Fatalf("FinalStates %q: %v", sqlrows.FinalStates, err)
		}
		got = append(got, n)
	}
	if !slices.Equal(got, want) || sqlrows.FinalStates != "3, 4, 5" {
		t.Fatalf("FinalStates = %q, spool.IsFinal holds for %v, the index predicate says 3, 4, 5", sqlrows.FinalStates, want)
	}
}
