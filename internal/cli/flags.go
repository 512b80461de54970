package cli

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/spool-run/spool"
	"github.com/spool-run/spool/internal/suggest"
)

// secondsOrDuration is a duration flag that also takes a bare number of
// seconds ("120" is 2m), so a flag that once took seconds keeps working.
type secondsOrDuration struct{ d *time.Duration }

func (f secondsOrDuration) String() string {
	// "0" is what pflag takes for a zero default and leaves out of the
	// help: a flag's usage says what 0 means itself.
	if f.d == nil || *f.d == 0 {
		return "0"
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

// enumFlag is a flag that takes one of a few words (a state, a log level,
// a format). A word that is none of them is refused with the list, and
// the nearest when one is close, before the command runs; Tab offers the
// words. Case does not matter; the flag keeps the word as listed.
type enumFlag struct {
	values []string
	// aliases are words also taken, for the value they stand for.
	aliases map[string]string
	one     *string   // the value, for a flag given once
	list    *[]string // the values, for a repeatable flag of comma-separated words
}

// enumVar defines --name on fs: one of values, value by default.
func enumVar(fs *pflag.FlagSet, p *string, name, value, usage string, values ...string) *enumFlag {
	*p = value
	f := &enumFlag{values: values, one: p}
	fs.Var(f, name, usage)
	return f
}

// enumListVar defines --name on fs: values, repeated or comma-separated.
func enumListVar(fs *pflag.FlagSet, p *[]string, name, usage string, values ...string) *enumFlag {
	f := &enumFlag{values: values, list: p}
	fs.Var(f, name, usage)
	return f
}

func (f *enumFlag) String() string {
	if f.list != nil {
		return strings.Join(*f.list, ",")
	}
	return *f.one
}

func (f *enumFlag) Set(s string) error {
	if f.one != nil {
		v, err := f.word(s)
		if err == nil {
			*f.one = v
		}
		return err
	}
	for w := range strings.SplitSeq(s, ",") {
		v, err := f.word(w)
		if err != nil {
			return err
		}
		*f.list = append(*f.list, v)
	}
	return nil
}

// word is the value s names.
func (f *enumFlag) word(s string) (string, error) {
	w := strings.ToLower(strings.TrimSpace(s))
	if v, ok := f.aliases[w]; ok {
		return v, nil
	}
	for _, v := range f.values {
		if w == strings.ToLower(v) {
			return v, nil
		}
	}
	return "", errors.New(notOneOf(s, f.values))
}

func (f *enumFlag) Type() string {
	if f.list != nil {
		return "strings"
	}
	return "string"
}

// notOneOf says that s is none of values, naming the nearest if one is
// close: `"runing" is not one of queued, running, …; did you mean running?`.
func notOneOf(s string, values []string) string {
	msg := fmt.Sprintf("%q is not one of %s", s, orList(values))
	if near := nearest(s, values); near != "" {
		msg += "; did you mean " + near + "?"
	}
	return msg
}

// nearest is the one of words closest to s, if it is within two edits
// (a typo) and no other is as close.
func nearest(s string, words []string) string {
	best, bestD, tie := "", 3, false
	for _, w := range words {
		switch d := suggest.Distance(strings.ToLower(s), strings.ToLower(w)); {
		case d < bestD:
			best, bestD, tie = w, d, false
		case d == bestD:
			tie = true
		}
	}
	if tie {
		return ""
	}
	return best
}

// logFlags defines --log-level and --log-format, for the commands that
// log as they run.
func logFlags(fs *pflag.FlagSet, level, format *string) {
	enumVar(fs, level, "log-level", "info", "debug, info, warn or error", "debug", "info", "warn", "error")
	enumVar(fs, format, "log-format", "text", "text or json", "text", "json")
}

// stateFlag defines --state: job states, repeated or comma-separated. A
// state's wire name (JOB_STATE_RUNNING) is taken too.
func stateFlag(fs *pflag.FlagSet, p *[]string, usage string) {
	var names []string
	aliases := map[string]string{}
	for _, s := range spool.States() {
		names = append(names, s.String())
		aliases["job_state_"+s.String()] = s.String()
	}
	enumListVar(fs, p, "state", usage, names...).aliases = aliases
}
