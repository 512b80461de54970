package cli

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// secondsOrDuration is a duration flag that also takes a bare number of
// seconds ("120" is 2m), so a flag that once took seconds keeps working.
type secondsOrDuration struct{ d *time.Duration }

func (f secondsOrDuration) String() string {
	if f.d == nil || *f.d == 0 {
		return "0s"
	}
	return f.d.String()
}

func (f secondsOrDuration) Set(s string) error {
	if n, err := strconv.ParseFloat(s, 64); err == nil {
		*f.d = time.Duration(n * float64(time.Second))
		return nil
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return fmt.Errorf("want a duration such as 90s or 2m, or a number of seconds")
	}
	*f.d = d
	return nil
}

func (f secondsOrDuration) Type() string { return "duration" }

// byteSize is a size flag: a number of bytes, or one with a unit (KiB,
// MiB, GiB, TiB; KB, MB, GB, TB are the same powers of 1024, as people
// mean them for disk room).
type byteSize struct{ n *int64 }

var byteUnits = []struct {
	suffix string
	size   int64
}{{"TiB", 1 << 40}, {"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}, {"TB", 1 << 40}, {"GB", 1 << 30}, {"MB", 1 << 20}, {"KB", 1 << 10}, {"B", 1}}

func (f byteSize) String() string {
	if f.n == nil {
		return "0"
	}
	for _, u := range byteUnits[:4] {
		if *f.n >= u.size && *f.n%u.size == 0 {
			return strconv.FormatInt(*f.n/u.size, 10) + u.suffix
		}
	}
	return strconv.FormatInt(*f.n, 10)
}

func (f byteSize) Set(s string) error {
	num, mult := strings.TrimSpace(s), int64(1)
	for _, u := range byteUnits {
		if cut, ok := strings.CutSuffix(num, u.suffix); ok {
			num, mult = strings.TrimSpace(cut), u.size
			break
		}
	}
	n, err := strconv.ParseInt(num, 10, 64)
	if err != nil || n < 0 || n > math.MaxInt64/mult {
		return fmt.Errorf("want a size such as 500MiB, 1GiB or a number of bytes")
	}
	*f.n = n * mult
	return nil
}

func (f byteSize) Type() string { return "size" }

// givenFlags are the names of the flags given on cmd's command line: a
// flag given its default value is not the same as one left out.
func givenFlags(cmd *cobra.Command) map[string]bool {
	given := map[string]bool{}
	cmd.Flags().Visit(func(f *pflag.Flag) { given[f.Name] = true })
	return given
}
